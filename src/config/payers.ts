import { Schema } from "effect"
import { AgentPolicy } from "../domain/policy.js"
import { HttpUrl, NonNegativeNumber, opt, PositiveInt } from "./fields.js"
import { outboundGuardFields } from "./probing.js"

/** The config sections that pay: the operator's economic probes and the buyer's side. */

/**
 * Economic probes: the service pays selected listed resources as a buyer would, with the
 * operator's probe key, so the transaction success rate rests on payments it made itself.
 */
export const EconomicProbesConfig = Schema.Struct({
  enabled: opt(Schema.Boolean, false).annotations({
    description:
      "Pay listed resources as a buyer would, so the transaction success rate rests on payments this service made (docs/verification.md)."
  }),
  payerKeyFile: opt(Schema.String.pipe(Schema.minLength(1)), "./data/probe.key").annotations({
    description:
      "The probe payer's Stellar secret seed, created with mode 0600 when missing; `sextant keys probe-address` prints its address to fund."
  }),
  intervalSeconds: opt(PositiveInt, 3600).annotations({ description: "Time between economic probe cycles." }),
  maxPriceUsd: opt(NonNegativeNumber, 0.01).annotations({ description: "No single probe pays more." }),
  budgetUsdPerDay: opt(NonNegativeNumber, 1).annotations({
    description: "Spend per UTC day across all probes, kept in the store (a restart does not reset it)."
  }),
  resources: Schema.optional(Schema.Array(Schema.String.pipe(Schema.minLength(1)))).annotations({
    description:
      "Resource ids to probe; absent means every listed trusted resource (catalog file or operator-listed) with a payable option within `maxPriceUsd`."
  }),
  includeUntrusted: opt(Schema.Boolean, false).annotations({
    description:
      "Without `resources`, pay untrusted listed resources too (registered, imported, bazaar: anyone could add one priced at the cap with their own `payTo`)."
  }),
  maxPerPayee: opt(PositiveInt, 1).annotations({
    description: "Resources paying one `payTo` that one cycle pays at most."
  }),
  maxPerProvider: opt(PositiveInt, 3).annotations({
    description: "Resources of one provider that one cycle pays at most."
  }),
  minObservations: opt(PositiveInt, 3).annotations({
    description: "Probes in the metric window a resource needs before it is paid."
  }),
  policy: opt(AgentPolicy, {}).annotations({
    description:
      "The operator's AgentPolicy: a resource is paid only when it ALLOWs one of its `exact` options (with `maxPriceUsd` as the price cap), so a never-probed or stale resource is not paid."
  })
})
export type EconomicProbesConfig = typeof EconomicProbesConfig.Type

/**
 * The buyer side (`sextant buy`, `sextant keys buyer-new`, the MCP `buy_resource` tool): what runs on
 * the buyer's machine with the buyer's key. The network, asset and Soroban RPC are the top-level
 * `network`, `asset` and `ledger.sorobanRpcUrl`.
 */
export const BuyerConfig = Schema.Struct({
  keyFile: opt(Schema.String.pipe(Schema.minLength(1)), "./data/buyer.key").annotations({
    description:
      "The buyer's Stellar secret seed (`sextant keys buyer-new` creates it, mode 0600); read on this machine only, never sent."
  }),
  service: opt(HttpUrl, "http://127.0.0.1:4020").annotations({
    description: "The Sextant service `sextant buy` routes through and asks for receipts (`--service` overrides)."
  }),
  apiKey: Schema.optional(Schema.String.pipe(Schema.minLength(1))).annotations({
    description:
      "Sent as `Authorization: Bearer` to `buyer.service` only (for `POST /v1/receipts` when it has `apiKeys`); `SEXTANT_API_KEY` also works, never the command line."
  }),
  spendLedgerFile: opt(Schema.NullOr(Schema.String.pipe(Schema.minLength(1))), null).annotations({
    description: "The local spend ledger (SQLite), one window per key; `null` is `<keyFile>.spend.db`."
  }),
  windowSeconds: opt(PositiveInt, 86_400).annotations({
    description: "The rolling window the spend ledger sums over."
  }),
  maxUsdPerWindow: opt(NonNegativeNumber, 1).annotations({
    description: "What the key may sign for within the window, whatever any service says."
  }),
  mcpSessionCapUsd: opt(NonNegativeNumber, 0.1).annotations({
    description:
      "What one MCP buyer session (one `sextant mcp --buyer-key-file` process) may spend, on top of the window (`--session-cap-usd` overrides)."
  }),
  timeoutMs: opt(PositiveInt, 10_000).annotations({
    description: "The unpaid request's timeout (the paid one waits up to 60 s for settlement)."
  }),
  maxBodyBytes: opt(PositiveInt, 4 * 1024 * 1024).annotations({
    description: "A paid answer larger than this is not kept: the purchase ends `PAID_BUT_FAILED`."
  }),
  ...outboundGuardFields
})
export type BuyerConfig = typeof BuyerConfig.Type
