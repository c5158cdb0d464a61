import { NotFoundError, rpc, xdr } from "@stellar/stellar-sdk"
import { Duration, Effect, Option, Schema } from "effect"
import { networkPassphrase, type StellarNetwork } from "../domain/stellar.js"
import { describeFailure, endpointName, type LedgerEndpoints, stellarClients } from "./clients.js"
import { authorizationsOf, cursorLedger, envelopeHash, isoTime, nonceKey, transferOfEvent, transfersOfMeta, transferTopicFilters } from "./decode.js"
import { type LedgerReaderShape, type LedgerTransaction, LedgerUnavailable, type TransferEvent } from "./LedgerReader.js"

export interface LedgerReaderOptions extends LedgerEndpoints {
  /** The network whose passphrase an answered envelope is hashed with, to check it is the one asked for. */
  readonly network: StellarNetwork
  /** Bound on each RPC or Horizon call (a multi-page read is bounded per page). */
  readonly timeoutMs: number
  /** Events asked for per getEvents page; tests lower it to exercise paging. */
  readonly eventPageSize?: number
}

/** A read of many pages stops here rather than loop on an RPC that never reaches the end. */
const MAX_EVENT_PAGES = 1000

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

export const makeLedgerReader = (options: LedgerReaderOptions): LedgerReaderShape => {
  const { horizon, soroban } = stellarClients(options)
  const pageSize = options.eventPageSize ?? 200
  const names = { rpc: `Soroban RPC ${endpointName(options.sorobanRpcUrl)}`, horizon: `Horizon ${endpointName(options.horizonUrl)}` }

  /** One SDK call, bounded by the timeout; every failure (refused, 5xx, JSON-RPC error, bad XDR) is LedgerUnavailable. */
  const call = <A>(source: keyof typeof names, what: string, run: () => Promise<A>) =>
    Effect.tryPromise({
      try: run,
      catch: (e) => e
    }).pipe(
      Effect.timeoutFail({
        duration: Duration.millis(options.timeoutMs),
        onTimeout: () => new LedgerUnavailable({ message: `${names[source]} ${what} did not answer within ${options.timeoutMs} ms` })
      }),
      Effect.mapError((e) =>
        e instanceof LedgerUnavailable ? e : new LedgerUnavailable({ message: `${names[source]} ${what} failed: ${describeFailure(e)}` })
      )
    )

  /** Decoding an answer that arrived: a throw means the upstream sent something malformed. */
  const decode = <A>(source: keyof typeof names, what: string, run: () => A) =>
    Effect.try({
      try: run,
      catch: (e) => new LedgerUnavailable({ message: `${names[source]} ${what} answered malformed data: ${describeFailure(e)}` })
    })

  const passphrase = networkPassphrase(options.network)

  interface Recorded {
    readonly hash: string
    readonly successful: boolean
    readonly ledger: number
    readonly closedAt: number | string
    readonly envelope: () => xdr.TransactionEnvelope
    readonly meta: () => xdr.TransactionMeta | null
  }
  /**
   * An answer is about the transaction asked for only if its envelope hashes to that hash: an
   * upstream (or anyone between) answering with another transaction's envelope confirms nothing.
   */
  const toTransaction = (source: keyof typeof names, tx: Recorded) =>
    Effect.flatMap(
      decode(source, "transaction", () => ({ envelope: tx.envelope(), meta: tx.meta() })),
      ({ envelope, meta }) =>
        Effect.flatMap(
          decode(source, "transaction", () => envelopeHash(envelope, passphrase)),
          (actual): Effect.Effect<LedgerTransaction, LedgerUnavailable> =>
            actual !== tx.hash
              ? Effect.fail(new LedgerUnavailable({ message: `${names[source]} answered transaction ${tx.hash} with the envelope of another transaction (${actual})` }))
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
      horizon
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
              Effect.mapError((e) => new LedgerUnavailable({ message: `${names.horizon} transaction answered an unexpected shape: ${e.message.split("\n")[0]}` })),
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

  const transaction = (hash: string) =>
    Effect.gen(function* () {
      const id = hash.toLowerCase()
      // A string that is not a hash names no transaction; asking would only get a JSON-RPC error.
      if (!HASH.test(id)) return Option.none<LedgerTransaction>()
      const answer = yield* call("rpc", "getTransaction", () => soroban.getTransaction(id))
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

  const readNonce = (address: string, nonce: bigint) =>
    Effect.gen(function* () {
      const key = yield* decode("rpc", "nonce key", () => nonceKey(address, nonce))
      const answer = yield* call("rpc", "getLedgerEntries", () => soroban.getLedgerEntries(key))
      return { consumed: answer.entries.length > 0, latestLedger: answer.latestLedger }
    })

  const nonceConsumed = (address: string, nonce: bigint) =>
    readNonce(address, nonce).pipe(Effect.map((read) => read.consumed), Effect.withSpan("LedgerReader.nonceConsumed"))

  const nonceAt = (address: string, nonce: bigint) => readNonce(address, nonce).pipe(Effect.withSpan("LedgerReader.nonceAt"))

  const transferEvents: LedgerReaderShape["transferEvents"] = (query) =>
    Effect.gen(function* () {
      if (query.endLedger < query.startLedger) return []
      const filters: Array<rpc.Api.EventFilter> = [
        { type: "contract", contractIds: [query.contract], topics: transferTopicFilters(query.from, query.to) }
      ]
      const events: Array<TransferEvent> = []
      // The first page asks for the range (endLedger is exclusive); later pages may only carry the
      // cursor, and RPC scans a bounded number of ledgers per request, so a short page does not
      // mean the range is done: its cursor says how far the scan got.
      let request: rpc.Api.GetEventsRequest = { filters, startLedger: query.startLedger, endLedger: query.endLedger + 1, limit: pageSize }
      for (let page = 0; page < MAX_EVENT_PAGES; page++) {
        const answer = yield* call("rpc", "getEvents", () => soroban.getEvents(request))
        const decoded = yield* decode("rpc", "getEvents", () => answer.events.filter((e) => e.inSuccessfulContractCall !== false).map(transferOfEvent))
        for (const event of decoded) {
          if (event && event.contract === query.contract && event.from === query.from && event.to === query.to && event.ledger >= query.startLedger && event.ledger <= query.endLedger) {
            events.push(event)
          }
        }
        const lastLedger = answer.events.at(-1)?.ledger ?? 0
        const scanned = cursorLedger(answer.cursor)
        const full = answer.events.length >= pageSize
        if (lastLedger > query.endLedger) return events
        if (!full && (scanned === null || scanned >= Math.min(query.endLedger, answer.latestLedger))) return events
        if (!answer.cursor) return yield* new LedgerUnavailable({ message: `${names.rpc} getEvents answered a full page without a cursor` })
        request = { filters, cursor: answer.cursor, limit: pageSize }
      }
      return yield* new LedgerUnavailable({ message: `${names.rpc} getEvents did not reach ledger ${query.endLedger} in ${MAX_EVENT_PAGES} pages` })
    }).pipe(Effect.withSpan("LedgerReader.transferEvents"))

  const latestLedger = () =>
    call("rpc", "getLatestLedger", () => soroban.getLatestLedger()).pipe(
      Effect.map((answer) => answer.sequence),
      Effect.withSpan("LedgerReader.latestLedger")
    )

  return { transaction, nonceConsumed, nonceAt, transferEvents, latestLedger }
}
