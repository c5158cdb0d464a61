import { type Horizon, NotFoundError, rpc, xdr } from "@stellar/stellar-sdk"
import { Effect, Option, Schema } from "effect"
import { authorizationsOf, envelopeHash, isoTime, transfersOfMeta } from "./decode.js"
import { type LedgerTransaction, LedgerUnavailable } from "./LedgerReader.js"
import type { LedgerCalls, LedgerSource } from "./ledgerCalls.js"

/** The fields of Horizon's transaction record this reads; unknown fields are ignored. */
const HorizonTransaction = Schema.Struct({
  hash: Schema.String,
  successful: Schema.Boolean,
  ledger: Schema.Number,
  created_at: Schema.String,
  envelope_xdr: Schema.String,
  /** Left out by Horizons that skip transaction meta (SDF's since Protocol 22): then no transfer is read. */
  result_meta_xdr: Schema.optional(Schema.NullOr(Schema.String))
})

const HASH = /^[0-9a-f]{64}$/

/** A transaction as either upstream recorded it, its XDR decoded only when read. */
interface Recorded {
  readonly hash: string
  readonly successful: boolean
  readonly ledger: number
  readonly closedAt: number | string
  readonly envelope: () => xdr.TransactionEnvelope
  readonly meta: () => xdr.TransactionMeta | null
}

/**
 * A transaction by hash: RPC first, Horizon for one past RPC's retention. An answer counts only
 * if its envelope hashes (with the network's passphrase) to the hash asked for.
 */
export const readTransaction = (
  { names, call, decode }: LedgerCalls,
  clients: { readonly horizon: Horizon.Server; readonly soroban: rpc.Server },
  passphrase: string
) => {
  /**
   * An answer is about the transaction asked for only if its envelope hashes to that hash: an
   * upstream (or anyone between) answering with another transaction's envelope confirms nothing.
   */
  const toTransaction = (source: LedgerSource, tx: Recorded) =>
    Effect.flatMap(
      decode(source, "transaction", () => ({ envelope: tx.envelope(), meta: tx.meta() })),
      ({ envelope, meta }) =>
        Effect.flatMap(
          decode(source, "transaction", () => envelopeHash(envelope, passphrase)),
          (actual): Effect.Effect<LedgerTransaction, LedgerUnavailable> =>
            actual !== tx.hash
              ? Effect.fail(
                  new LedgerUnavailable({
                    message: `${names[source]} answered transaction ${tx.hash} with the envelope of another transaction (${actual})`
                  })
                )
              : decode(source, "transaction", () => ({
                  hash: tx.hash,
                  successful: tx.successful,
                  ledger: tx.ledger,
                  closedAt: isoTime(tx.closedAt),
                  transfers: tx.successful && meta !== null ? transfersOfMeta(meta) : [],
                  authorizations: authorizationsOf(envelope)
                }))
        )
    )

  /** Horizon keeps every transaction; RPC only its retention window, so a miss there is asked again here. */
  const fromHorizon = (hash: string) =>
    call("horizon", "transaction", () =>
      clients.horizon
        .transactions()
        .transaction(hash)
        .call()
        .then(
          (record): unknown => record,
          (e) => (e instanceof NotFoundError ? null : Promise.reject(e))
        )
    ).pipe(
      Effect.flatMap((record) =>
        record === null
          ? Effect.succeed(Option.none<LedgerTransaction>())
          : Schema.decodeUnknown(HorizonTransaction)(record).pipe(
              Effect.mapError(
                (e) =>
                  new LedgerUnavailable({
                    message: `${names.horizon} transaction answered an unexpected shape: ${e.message.split("\n")[0]}`
                  })
              ),
              Effect.flatMap((tx) =>
                toTransaction("horizon", {
                  hash,
                  successful: tx.successful,
                  ledger: tx.ledger,
                  closedAt: tx.created_at,
                  envelope: () => xdr.TransactionEnvelope.fromXdr(tx.envelope_xdr, "base64"),
                  meta: () => (tx.result_meta_xdr ? xdr.TransactionMeta.fromXdr(tx.result_meta_xdr, "base64") : null)
                })
              ),
              Effect.map(Option.some)
            )
      )
    )

  return (hash: string) =>
    Effect.gen(function* () {
      const id = hash.toLowerCase()
      // A string that is not a hash names no transaction; asking would only get a JSON-RPC error.
      if (!HASH.test(id)) return Option.none<LedgerTransaction>()
      const answer = yield* call("rpc", "getTransaction", () => clients.soroban.getTransaction(id))
      if (answer.status === rpc.Api.GetTransactionStatus.NOT_FOUND) return yield* fromHorizon(id)
      const recorded = yield* toTransaction("rpc", {
        hash: id,
        successful: answer.status === rpc.Api.GetTransactionStatus.SUCCESS,
        ledger: answer.ledger,
        closedAt: answer.createdAt,
        envelope: () => answer.envelopeXdr,
        meta: () => answer.resultMetaXdr
      })
      return Option.some(recorded)
    }).pipe(Effect.withSpan("LedgerReader.transaction"))
}
