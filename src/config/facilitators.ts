import { Schema } from "effect"
import { StellarNetwork } from "../domain/stellar.js"
import { HttpUrl, NonNegativeNumber, opt, PositiveInt } from "./fields.js"

/** The `facilitators` section: HTTP backends and the embedded Stellar one. */

export const FacilitatorBackend = Schema.Struct({
  id: Schema.propertySignature(Schema.String.pipe(Schema.minLength(1))).annotations({
    description: "The backend's name in logs, metrics and `/x402/facilitators`; unique."
  }),
  url: Schema.propertySignature(HttpUrl).annotations({
    description: "The backend's base URL; `/supported`, `/verify` and `/settle` are appended."
  }),
  apiKey: Schema.optional(Schema.String.pipe(Schema.minLength(1))).annotations({
    description:
      "Sent as `Authorization: Bearer` to this backend only; a redirect from it is an error answer, never followed."
  })
})
export type FacilitatorBackend = typeof FacilitatorBackend.Type

/**
 * The embedded Stellar `exact` facilitator (`src/facilitator/`): this service's own fee account
 * settles payments through the configured `ledger` endpoints, as one more entry of the pool.
 */
export const EmbeddedFacilitator = Schema.Struct({
  id: Schema.propertySignature(Schema.String.pipe(Schema.minLength(1))).annotations({
    description: "The backend's name in logs, metrics and `/x402/facilitators`; unique."
  }),
  type: Schema.propertySignature(Schema.Literal("stellar")).annotations({
    description: "`stellar`: settle in this process with the fee account below (docs/facilitator.md)."
  }),
  network: Schema.propertySignature(StellarNetwork).annotations({
    description: "The network it settles on; must be the service's `network` (its ledger is `ledger`)."
  }),
  feeAccountKeyFile: Schema.propertySignature(Schema.String.pipe(Schema.minLength(1))).annotations({
    description:
      "The fee account's Stellar secret seed, created with mode 0600 when missing; `sextant keys facilitator-new` prints the address to fund."
  }),
  channels: opt(Schema.Int.pipe(Schema.between(0, 256)), 0).annotations({
    description:
      "Channel accounts (sequence sources derived from the fee key, each leased to one settle at a time, wrapped in a fee bump paid by the fee account); 0 makes the fee account the only source, about one settle per ledger. `sextant facilitator channels` creates and funds them."
  }),
  minFeeBalanceXlm: opt(NonNegativeNumber, 5).annotations({
    description: "Below this XLM balance of the fee account the backend is unhealthy (failover moves on)."
  }),
  balanceCheckSeconds: opt(Schema.NullOr(Schema.Number.pipe(Schema.positive(), Schema.finite())), null).annotations({
    description:
      "Read the fee account's balance on this schedule too; `null` reads it only after settles (no ledger traffic of its own)."
  }),
  pollIntervalMs: opt(PositiveInt, 500).annotations({
    description: "How often a submitted settle asks `getTransaction` until `SUCCESS`, `FAILED` or the settle deadline."
  })
})
export type EmbeddedFacilitator = typeof EmbeddedFacilitator.Type

/** One entry of `facilitators`: an HTTP backend, or the embedded Stellar one. */
export const FacilitatorEntry = Schema.Union(EmbeddedFacilitator, FacilitatorBackend)
export type FacilitatorEntry = typeof FacilitatorEntry.Type

export const isEmbedded = (entry: FacilitatorEntry): entry is EmbeddedFacilitator =>
  "type" in entry && entry.type === "stellar"

/**
 * The bundled default: one embedded backend on the service's network, its key created on first
 * start. Pubnet's key file is another file: mainnet uses a separate signing account.
 */
export const defaultEmbedded = (network: StellarNetwork): EmbeddedFacilitator =>
  network === "stellar:testnet"
    ? DEFAULT_EMBEDDED
    : { ...DEFAULT_EMBEDDED, id: "embedded-pubnet", network, feeAccountKeyFile: "./data/facilitator-pubnet.key" }

export const DEFAULT_EMBEDDED: EmbeddedFacilitator = {
  id: "embedded-testnet",
  type: "stellar",
  network: "stellar:testnet",
  feeAccountKeyFile: "./data/facilitator.key",
  channels: 0,
  minFeeBalanceXlm: 5,
  balanceCheckSeconds: null,
  pollIntervalMs: 500
}
