import { createHash } from "node:crypto"
import { Keypair } from "@stellar/stellar-sdk"
import { Effect, type Option, Queue } from "effect"

/**
 * Channel account `index` of a fee account: its seed is sha256 of a fixed label, the index and the
 * fee account's own seed. Derived, not stored, so the fee key file is the only secret to keep and
 * back up, and `sextant facilitator channels` finds the same accounts on any machine.
 */
export const channelKeypair = (fee: Keypair, index: number): Keypair =>
  Keypair.fromRawEd25519Seed(
    createHash("sha256").update(`sextant-channel/${index}/`).update(fee.rawSecretKey()).digest()
  )

/**
 * A sequence source: the account a settle's transaction is from. It may have one transaction in
 * the network's queue at a time, so it is leased to one settle until that transaction left the
 * queue (applied, failed, or past its time bound).
 */
export interface SequenceSource {
  readonly keypair: Keypair
  readonly address: string
  /** Its sequence number as last seen or used; null when it must be read from the ledger (first use, after txBadSeq). */
  sequence: bigint | null
}

export interface SourcePool {
  /** The next free source, waiting up to `withinMs`; none when every source stayed leased. */
  readonly lease: (withinMs: number) => Effect.Effect<Option.Option<SequenceSource>>
  readonly release: (source: SequenceSource) => Effect.Effect<void>
  /** Sources leased now. */
  readonly inUse: Effect.Effect<number>
  readonly size: number
}

/** A pool over `sources`, each leased to one holder at a time, first come first served. */
export const makeSourcePool = (keypairs: ReadonlyArray<Keypair>): Effect.Effect<SourcePool> =>
  Effect.gen(function* () {
    const free = yield* Queue.unbounded<SequenceSource>()
    yield* Queue.offerAll(
      free,
      keypairs.map((keypair) => ({ keypair, address: keypair.publicKey(), sequence: null }))
    )
    return {
      lease: (withinMs) => Queue.take(free).pipe(Effect.timeoutOption(Math.max(0, withinMs))),
      release: (source) => Effect.asVoid(Queue.offer(free, source)),
      inUse: Effect.map(Queue.size(free), (n) => keypairs.length - n),
      size: keypairs.length
    }
  })
