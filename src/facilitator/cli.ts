import { Asset, Operation, TransactionBuilder } from "@stellar/stellar-sdk"
import { Effect, Either, Redacted } from "effect"
import { type Config, type EmbeddedFacilitator, isEmbedded } from "../config.js"
import { networkPassphrase } from "../domain/stellar.js"
import { loadOrCreateFacilitatorKey } from "../keys/stellarKey.js"
import type { CommandOutput } from "../lifecycle/commandOutput.js"
import { channelKeypair } from "./channels.js"
import { makeFacilitatorRpc } from "./ledgerClient.js"
import { follow } from "./submit.js"

/** Operations per transaction: the network's limit is 100. */
const OPERATIONS_PER_TRANSACTION = 100
const STROOPS_PER_XLM = 10_000_000n

/** What one channel needs now: created, topped up to the target, merged back, or nothing. */
export type ChannelAction =
  | { readonly kind: "create"; readonly stroops: bigint }
  | { readonly kind: "topUp"; readonly stroops: bigint }
  | { readonly kind: "merge" }
  | { readonly kind: "none" }

/**
 * The action for one channel account: a missing one is created with `target`; one below half of
 * it is topped up to it (a channel pays no fees, the fee bump does: its XLM is the reserve and a
 * margin); with `merge`, an existing one is merged into the fee account and a missing one left.
 */
export const channelAction = (balance: bigint | null, target: bigint, merge: boolean): ChannelAction => {
  if (merge) return balance === null ? { kind: "none" } : { kind: "merge" }
  if (balance === null) return { kind: "create", stroops: target }
  return balance * 2n < target ? { kind: "topUp", stroops: target - balance } : { kind: "none" }
}

const stroopsText = (stroops: bigint) =>
  `${stroops / STROOPS_PER_XLM}.${(stroops % STROOPS_PER_XLM).toString().padStart(7, "0")}`

/** The embedded entry named `id`, else the first one. */
const entryOf = (config: Config, id: string | undefined): EmbeddedFacilitator | undefined =>
  config.facilitators.filter(isEmbedded).find((e) => id === undefined || e.id === id)

/**
 * `sextant facilitator channels`: creates the embedded facilitator's missing channel accounts and
 * tops up the low ones (or, with `--merge`, merges them back), in transactions from the fee
 * account, through the configured ledger. Prints one JSON line per channel and a summary; exit 0,
 * 1 when a transaction failed, 2 on a usage or key error.
 */
export const channelsCommand = async (
  config: Config,
  options: { readonly id?: string; readonly xlm: number; readonly merge: boolean },
  output: CommandOutput
): Promise<number> => {
  const entry = entryOf(config, options.id)
  if (entry === undefined) {
    output.err(
      options.id === undefined
        ? "no embedded facilitator (type stellar) is configured"
        : `no embedded facilitator with id "${options.id}"`
    )
    return 2
  }
  if (entry.channels === 0) {
    output.err(`facilitator "${entry.id}" has channels: 0; set channels in its config entry first`)
    return 2
  }
  const loaded = await Effect.runPromise(
    Effect.either(loadOrCreateFacilitatorKey("feeAccountKeyFile", entry.feeAccountKeyFile))
  )
  if (Either.isLeft(loaded)) {
    output.err(loaded.left.message)
    return 2
  }
  const fee = Redacted.value(loaded.right.signer)
  const rpc = makeFacilitatorRpc(config.ledger, entry.network, config.ledger.timeoutMs)
  const passphrase = networkPassphrase(entry.network)
  const target = BigInt(Math.round(options.xlm * 1e7))
  const program = Effect.gen(function* () {
    const channels = Array.from({ length: entry.channels }, (_, i) => channelKeypair(fee, i))
    const planned = yield* Effect.forEach(channels, (channel) =>
      Effect.map(rpc.account(channel.publicKey()), (state) => ({
        channel,
        action: channelAction(state?.balanceStroops ?? null, target, options.merge)
      }))
    )
    for (const { channel, action } of planned)
      output.out(
        JSON.stringify({
          channel: channel.publicKey(),
          action: action.kind,
          ...("stroops" in action ? { xlm: stroopsText(action.stroops) } : {})
        })
      )
    const todo = planned.filter((p) => p.action.kind !== "none")
    let failed = 0
    for (let start = 0; start < todo.length; start += OPERATIONS_PER_TRANSACTION) {
      const chunk = todo.slice(start, start + OPERATIONS_PER_TRANSACTION)
      const account = yield* rpc.account(fee.publicKey())
      if (account === null)
        return yield* Effect.fail(`the fee account ${fee.publicKey()} does not exist: fund it first`)
      const builder = new TransactionBuilder(
        {
          accountId: () => fee.publicKey(),
          sequenceNumber: () => account.sequence.toString(),
          incrementSequenceNumber: () => undefined
        },
        { fee: String(config.ledger.inclusionFeeStroops), networkPassphrase: passphrase }
      )
      for (const { channel, action } of chunk) {
        if (action.kind === "create")
          builder.addOperation(
            Operation.createAccount({ destination: channel.publicKey(), startingBalance: stroopsText(action.stroops) })
          )
        if (action.kind === "topUp")
          builder.addOperation(
            Operation.payment({
              destination: channel.publicKey(),
              asset: Asset.native(),
              amount: stroopsText(action.stroops)
            })
          )
        if (action.kind === "merge")
          builder.addOperation(Operation.accountMerge({ destination: fee.publicKey(), source: channel.publicKey() }))
      }
      const tx = builder.setTimeout(60).build()
      tx.sign(fee, ...chunk.filter((c) => c.action.kind === "merge").map((c) => c.channel))
      const sent = yield* rpc.send(tx)
      if (sent.status !== "PENDING" && sent.status !== "DUPLICATE") {
        failed++
        continue
      }
      const status = yield* follow({ rpc, pollIntervalMs: entry.pollIntervalMs }, sent.hash, Date.now() + 90_000)
      output.out(JSON.stringify({ transaction: sent.hash, status }))
      if (status !== "SUCCESS") failed++
    }
    output.out(
      JSON.stringify({
        facilitator: entry.id,
        feeAccount: fee.publicKey(),
        channels: channels.length,
        changed: todo.length,
        failed
      })
    )
    return failed === 0 ? 0 : 1
  })
  const result = await Effect.runPromise(Effect.either(program))
  if (Either.isRight(result)) return result.right
  output.err(typeof result.left === "string" ? result.left : result.left.message)
  return 1
}
