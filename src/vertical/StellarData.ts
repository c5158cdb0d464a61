import {
  Account,
  Address,
  BASE_FEE,
  Contract,
  rpc,
  scValToNative,
  TimeoutInfinite,
  TransactionBuilder,
  xdr
} from "@stellar/stellar-sdk"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { describeFailure as describe, type LedgerEndpoints, stellarClients } from "../ledger/clients.js"
import { UpstreamFailure } from "./errors.js"
import { summarizeEvent, summarizeInstance } from "./sorobanXdr.js"
import { readStellarToml } from "./stellarToml.js"
import {
  type ContractInstance,
  HorizonAccount,
  HorizonAssetStats,
  HorizonLedger,
  HorizonOperation,
  type TokenEvent,
  type TokenEventWindow,
  type TomlLookup
} from "./upstream.js"
import { upstreamCalls } from "./upstreamCalls.js"

/** Reads the vertical needs from Horizon, Soroban RPC and issuers' home domains. */
export interface StellarDataShape {
  readonly account: (id: string) => Effect.Effect<Option.Option<HorizonAccount>, UpstreamFailure>
  readonly assetStats: (
    code: string,
    issuer: string
  ) => Effect.Effect<Option.Option<HorizonAssetStats>, UpstreamFailure>
  /** The account's most recent operations (one Horizon page), newest first. */
  readonly operations: (account: string) => Effect.Effect<ReadonlyArray<HorizonOperation>, UpstreamFailure>
  readonly ledgerCloseTime: (sequence: number) => Effect.Effect<Option.Option<string>, UpstreamFailure>
  readonly contractInstance: (contractId: string) => Effect.Effect<Option.Option<ContractInstance>, UpstreamFailure>
  /** Admin and supply events of a token contract over the last day of ledgers RPC still holds. */
  readonly tokenEvents: (contractId: string) => Effect.Effect<TokenEventWindow, UpstreamFailure>
  /** The token's `balance(wallet)`, simulated; none when the contract refuses to evaluate it. */
  readonly tokenBalance: (contractId: string, wallet: string) => Effect.Effect<Option.Option<bigint>, UpstreamFailure>
  /** A missing or broken stellar.toml is a finding, so this never fails. */
  readonly stellarToml: (homeDomain: string) => Effect.Effect<TomlLookup>
}

export class StellarData extends Context.Tag("sextant/vertical/StellarData")<StellarData, StellarDataShape>() {
  static readonly Live = (config: StellarDataConfig) => Layer.sync(StellarData, () => makeStellarData(config))
}

export interface StellarDataConfig extends LedgerEndpoints {
  readonly networkPassphrase: string
  readonly timeoutMs: number
  readonly allowPrivateHomeDomains: boolean
}

/** About one day of 5-second ledgers; RPC keeps events for a bounded window anyway. */
const EVENT_WINDOW_LEDGERS = 17_280
const EVENT_PAGE = 200
const EVENT_PAGES = 5
const EVENT_NAMES = ["mint", "burn", "clawback", "set_admin", "set_authorized"] as const

export const makeStellarData = (config: StellarDataConfig): StellarDataShape => {
  const { horizon, soroban } = stellarClients(config)

  const { call, horizonCall, decode, decodeOption } = upstreamCalls(config.timeoutMs)

  const instanceKey = (contractId: string) => new Contract(contractId).getFootprint()

  const topicFilters = EVENT_NAMES.map((name) => [xdr.ScVal.scvSymbol(name).toXdr("base64"), "**"])

  const tokenEvents = (contractId: string) =>
    Effect.gen(function* () {
      const health = yield* call("soroban-rpc", "getHealth", () => soroban.getHealth())
      const fromLedger = Math.max(health.oldestLedger, health.latestLedger - EVENT_WINDOW_LEDGERS)
      const filters = [{ type: "contract" as const, contractIds: [contractId], topics: topicFilters }]
      const events: Array<TokenEvent> = []
      let cursor: string | undefined
      for (let page = 0; page < EVENT_PAGES; page++) {
        const request: rpc.Api.GetEventsRequest =
          cursor === undefined
            ? { filters, startLedger: fromLedger, limit: EVENT_PAGE }
            : { filters, cursor, limit: EVENT_PAGE }
        const response = yield* call("soroban-rpc", "getEvents", () => soroban.getEvents(request))
        const summarized = yield* Effect.try({
          try: () => response.events.filter((e) => e.inSuccessfulContractCall !== false).map(summarizeEvent),
          catch: (e) =>
            new UpstreamFailure({
              source: "soroban-rpc",
              message: `soroban-rpc getEvents answered undecodable events: ${describe(e)}`
            })
        })
        for (const event of summarized) if (event) events.push(event)
        if (response.events.length < EVENT_PAGE) break
        cursor = response.cursor
      }
      return { fromLedger, toLedger: health.latestLedger, events: events.slice(-EVENT_PAGE) }
    })

  const tokenBalance = (contractId: string, wallet: string) =>
    Effect.gen(function* () {
      // Simulation only reads; the source account's sequence number is never used.
      const tx = new TransactionBuilder(new Account(wallet, "0"), {
        fee: BASE_FEE,
        networkPassphrase: config.networkPassphrase
      })
        .addOperation(new Contract(contractId).call("balance", new Address(wallet).toScVal()))
        .setTimeout(TimeoutInfinite)
        .build()
      const simulation = yield* call("soroban-rpc", "simulateTransaction", () => soroban.simulateTransaction(tx))
      if (!rpc.Api.isSimulationSuccess(simulation) || !simulation.result) return Option.none<bigint>()
      const value: unknown = scValToNative(simulation.result.retval)
      return typeof value === "bigint" ? Option.some(value) : Option.none<bigint>()
    })

  return {
    account: (id) =>
      horizonCall("account", () => horizon.accounts().accountId(id).call()).pipe(
        Effect.flatMap(decodeOption(HorizonAccount, "account"))
      ),
    assetStats: (code, issuer) =>
      call("horizon", "assets", () => horizon.assets().forCode(code).forIssuer(issuer).call()).pipe(
        Effect.map((page) => Option.fromNullable(page.records[0])),
        Effect.flatMap(decodeOption(HorizonAssetStats, "assets"))
      ),
    operations: (account) =>
      horizonCall("operations", () => horizon.operations().forAccount(account).order("desc").limit(200).call()).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.succeed([]),
            onSome: (page) => decode(Schema.Array(HorizonOperation), "horizon", "operations")(page.records)
          })
        )
      ),
    ledgerCloseTime: (sequence) =>
      horizonCall("ledger", () => horizon.ledgers().ledger(sequence).call()).pipe(
        Effect.flatMap(decodeOption(HorizonLedger, "ledger")),
        Effect.map(Option.map((ledger) => ledger.closed_at))
      ),
    contractInstance: (contractId) =>
      call("soroban-rpc", "getLedgerEntries", () => soroban.getLedgerEntries(instanceKey(contractId))).pipe(
        Effect.flatMap((response) =>
          Effect.try({
            try: () => Option.map(Option.fromNullable(response.entries[0]), summarizeInstance),
            catch: (e) =>
              new UpstreamFailure({
                source: "soroban-rpc",
                message: `soroban-rpc getLedgerEntries answered an undecodable entry: ${describe(e)}`
              })
          })
        )
      ),
    tokenEvents,
    tokenBalance,
    stellarToml: readStellarToml(config)
  }
}
