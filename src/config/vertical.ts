import { Schema } from "effect"
import { BaseUnits, StellarAddress } from "../domain/stellar.js"
import { NonNegativeNumber, opt, PositiveInt, Ratio } from "./fields.js"

/** The `vertical` and `demo` sections: what `serve` starts beside the service. */

export const VerticalConfig = Schema.Struct({
  enabled: opt(Schema.Boolean, true).annotations({
    description: "Start the reference vertical beside the service on `serve`."
  }),
  host: opt(Schema.String, "127.0.0.1").annotations({ description: "Where the vertical listens." }),
  port: opt(Schema.Int.pipe(Schema.between(0, 65535)), 4021).annotations({ description: "The vertical's port." }),
  name: opt(Schema.String.pipe(Schema.pattern(/^[a-z0-9-]+$/)), "stellar-intel").annotations({
    description: "Path segment: endpoints live under `/<name>/v1/rwa/`."
  }),
  payTo: opt(StellarAddress, "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464").annotations({
    description: "Recipient of its payments."
  }),
  facilitatorUrl: opt(Schema.NullOr(Schema.String), null).annotations({
    description: "Its facilitator; `null` is this service's own `/x402`."
  }),
  horizonUrl: opt(Schema.NullOr(Schema.String), null).annotations({
    description: "Horizon it reads; `null` is `ledger.horizonUrl`."
  }),
  sorobanRpcUrl: opt(Schema.NullOr(Schema.String), null).annotations({
    description: "Soroban RPC it reads; `null` is `ledger.sorobanRpcUrl`."
  }),
  prices: opt(
    Schema.Struct({
      inspect: BaseUnits,
      changes: BaseUnits,
      compliance: BaseUnits,
      eligibility: BaseUnits
    }),
    { inspect: "10000", changes: "20000", compliance: "20000", eligibility: "5000" }
  ).annotations({ description: "Per-endpoint price in base units." }),
  publicUrl: opt(
    Schema.NullOr(
      Schema.String.pipe(
        Schema.pattern(/^https?:\/\/[^/\s]+$/, {
          message: () => "expected an origin such as https://intel.example.com"
        })
      )
    ),
    null
  ).annotations({
    description: "Origin buyers reach it at (behind a proxy); `null` is `http://<host>:<port>`.",
    examples: ["https://intel.example.com"]
  }),
  facilitatorApiKey: opt(Schema.NullOr(Schema.String.pipe(Schema.minLength(1))), null).annotations({
    description: "Sent as `Authorization: Bearer` to its facilitator (needed when this service has `apiKeys`)."
  }),
  facilitatorTimeoutMs: opt(PositiveInt, 60000).annotations({
    description: "Bound on its verify and settle calls (settle waits for the ledger, so it is generous)."
  }),
  upstreamTimeoutMs: opt(PositiveInt, 8000).annotations({
    description: "Bound on each Horizon, Soroban RPC and `stellar.toml` call."
  }),
  allowPrivateHomeDomains: opt(Schema.Boolean, false).annotations({
    description: "Fetch `stellar.toml` from loopback or private home domains (tests only)."
  }),
  largeTransferShare: opt(Ratio, 0.01).annotations({
    description: 'A mint or burn is "large" from this share of the supply.'
  }),
  offerKeyFile: opt(Schema.NullOr(Schema.String.pipe(Schema.minLength(1))), null).annotations({
    description:
      "The Ed25519 key (PKCS#8 PEM) the vertical signs its offers and receipts with (`offer-receipt`), created with mode 0600 on first start and kept across restarts, so its `did:jwk` signer is a lasting identity; never logged. `null` is `offer-<name>.key` beside the receipt signer's key file (`./data` with an HMAC signer)."
  })
})
export type VerticalConfig = typeof VerticalConfig.Type

/**
 * The demo providers `serve` starts beside the vertical (src/demo/), one per behaviour. Each sells
 * what the bundled demo catalog lists for provider `demo-<behaviour>`, through the vertical's app.
 */
export const DEMO_BEHAVIOURS = ["fast", "slow", "flaky", "raiser"] as const
export type DemoBehaviour = (typeof DEMO_BEHAVIOURS)[number]

/** A port a catalog URL can name before anything listens: never 0. */
const FixedPort = Schema.Int.pipe(Schema.between(1, 65535))

export const DemoConfig = Schema.Struct({
  enabled: opt(Schema.NullOr(Schema.Boolean), null).annotations({
    description:
      'Start the demo providers beside the vertical; `null` means "when `catalog` is not configured". False also leaves their entries out of the bundled catalog.'
  }),
  host: opt(Schema.String, "127.0.0.1").annotations({ description: "Where they listen." }),
  ports: opt(
    Schema.Struct({
      fast: opt(FixedPort, 4022),
      slow: opt(FixedPort, 4023),
      flaky: opt(FixedPort, 4024),
      raiser: opt(FixedPort, 4025)
    }),
    { fast: 4022, slow: 4023, flaky: 4024, raiser: 4025 }
  ).annotations({
    description:
      "One port per provider (1-65535: the catalog's URLs name it); each must differ from the others, `port` and `vertical.port`."
  }),
  slowDelayMs: opt(Schema.Int.pipe(Schema.nonNegative()), 400).annotations({
    description: "How long `demo-slow` waits before each answer."
  }),
  flakyFailureShare: opt(Ratio, 0.5).annotations({
    description: "Share of `demo-flaky`'s requests answered 500, spread evenly (with 0.5 every second one)."
  }),
  priceRaiseAfterSeconds: opt(NonNegativeNumber, 60).annotations({
    description:
      "Seconds after start from which `demo-raiser`'s challenges ask more than its catalog entries advertise."
  }),
  priceRaiseFactor: opt(Schema.Number.pipe(Schema.finite(), Schema.greaterThan(1)), 2).annotations({
    description:
      "What they then ask, as a multiple of the advertised price (above 1; quarantined when above 1 + `probes.priceTolerance`)."
  }),
  offerKeyFolder: opt(Schema.NullOr(Schema.String.pipe(Schema.minLength(1))), null).annotations({
    description:
      "Where each demo provider keeps the Ed25519 key it signs offers and receipts with: `offer-demo-<behaviour>.key`, created with mode 0600 on first start and kept across restarts; never logged. `null` is the folder of the receipt signer's key file (`./data` with an HMAC signer)."
  })
})
export type DemoConfig = typeof DemoConfig.Type

/** The `demo` block with `enabled` resolved. */
export interface DemoSettings extends DemoConfig {
  readonly enabled: boolean
}
