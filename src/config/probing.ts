import { Schema } from "effect"
import { NonNegativeNumber, opt, PositiveInt, Ratio } from "./fields.js"

/** The config sections of probing: the schedule, how evidence becomes standing, what strangers may add, catalog sources. */

/**
 * Another discovery service to import from: a Bazaar-shaped `GET <url>/discovery/resources`
 * (or `url` itself when it already ends so), pulled every `intervalSeconds`. Only items payable on
 * this deployment's network and asset are kept; `networks`, when given, narrows that further.
 */
export const CatalogSource = Schema.Struct({
  id: Schema.propertySignature(
    Schema.String.pipe(
      Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/, { message: () => 'expected a lowercase id such as "cdp-bazaar"' })
    )
  ).annotations({ description: "Lowercase `[a-z0-9._-]`, unique; the imported resources' source is `import:<id>`." }),
  url: Schema.propertySignature(
    Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/, { message: () => "expected an http(s) URL" }))
  ).annotations({
    description: "The service's base URL (`/discovery/resources` is appended) or that endpoint itself."
  }),
  intervalSeconds: opt(PositiveInt, 3600).annotations({
    description: "Pause between the end of one pull and the start of the next."
  }),
  networks: Schema.optional(Schema.Array(Schema.String.pipe(Schema.minLength(1)))).annotations({
    description: "Narrows what is kept; only this deployment's `network` and `asset` can be kept at all."
  })
})
export type CatalogSource = typeof CatalogSource.Type

/**
 * The outbound guard's fields (`outbound/outboundGuard.ts`), shared by probes and the buyer:
 * both send requests to URLs a catalog named, which must not reach private networks unless trusted.
 */
export const outboundGuardFields = {
  allowPrivateTargets: opt(Schema.Boolean, false).annotations({
    description: "Allow requests to loopback, private, link-local and metadata addresses."
  }),
  trustedOrigins: opt(Schema.Array(Schema.String), []).annotations({
    description:
      "Origins reached even though private. The origins this process itself serves are always added: the vertical's when `vertical.enabled`, the demo providers' when `demo.enabled`, wherever they listen (so the defaults trust `http://127.0.0.1:4021`-`4025`, and nothing once both are off)."
  })
}

export const ProbesConfig = Schema.Struct({
  intervalSeconds: opt(PositiveInt, 60).annotations({
    description: "Each resource is probed once per interval, at its own slot in it."
  }),
  timeoutMs: opt(PositiveInt, 5000).annotations({ description: "Bound on each probe." }),
  concurrency: opt(PositiveInt, 8).annotations({
    description:
      "Probes in flight at once for trusted entries (catalog file, operator-listed); untrusted ones have their own lane (`ingestion.concurrency`)."
  }),
  leaseSeconds: opt(PositiveInt, 60).annotations({
    description:
      "How long a claim on a due resource holds; an instance that dies gives its claims back after this. Must exceed `timeoutMs`."
  }),
  // Retired, still accepted: config field names are a contract (docs/decisions.md, Config field names).
  jitter: Schema.optional(Ratio).annotations({
    description:
      "Accepted and ignored, so older config files still load: per-resource slots spread probes over the interval."
  }),
  ...outboundGuardFields,
  retentionDays: opt(PositiveInt, 7).annotations({
    description:
      "Hourly rollups of probes older than this are pruned; also the longest span `GET /v1/resources/{id}/history` reads."
  }),
  rawRetentionHours: opt(PositiveInt, 2).annotations({
    description: "Raw observations older than this are pruned (history beyond is the hourly rollups)."
  }),
  maxBodyBytes: opt(PositiveInt, 65536).annotations({ description: "Cap on a probed response body." }),
  priceTolerance: opt(NonNegativeNumber, 0.05).annotations({
    description: "Share above the advertised price a challenge may ask before the resource is quarantined."
  }),
  validationsPerInterval: opt(PositiveInt, 1).annotations({
    description:
      "Observations callers' `/v1/validate` of a catalog resource may add per probe interval beside the schedule's one. Every validation answered 200 is recorded; one beyond this is 429 `RATE_LIMITED` with `Retry-After` (when the oldest observation counted leaves the interval). The default, 1, keeps callers from outweighing the schedule."
  })
})
export type ProbesConfig = typeof ProbesConfig.Type

export const VerificationConfig = Schema.Struct({
  windowHours: opt(PositiveInt, 24).annotations({ description: "The metric window, in hours." }),
  confidenceSampleScale: opt(PositiveInt, 12).annotations({
    description: "Probes in the window at which the sample-size term of `confidence` reaches 1 - 1/e."
  }),
  confidenceHalfLifeSeconds: opt(PositiveInt, 3600).annotations({
    description: "Seconds after the newest probe at which the freshness term of `confidence` has halved."
  }),
  maxEvidenceAgeSeconds: opt(PositiveInt, 86400).annotations({
    description: "Evidence older than this is `VERIFICATION_TOO_OLD` (a policy may tighten it)."
  }),
  degradedBelow: opt(Ratio, 0.8).annotations({
    description: "Healthy share of the probes in the window below which a resource is `DEGRADED`."
  }),
  offlineAfterFailures: opt(PositiveInt, 3).annotations({
    description: "Consecutive connect failures or timeouts that make a resource `OFFLINE`."
  }),
  quarantineReleaseChallenges: opt(Schema.Int.pipe(Schema.greaterThanOrEqualTo(2)), 3).annotations({
    description:
      "An automatic quarantine (a challenge contradicted the catalog) lifts only after this many challenges in a row agree with the catalog, the first and the last at least `probes.intervalSeconds` apart (2 or more); probes that get no challenge neither count nor break the run. Operator quarantines are lifted by an operator only."
  }),
  continuousMinProbes: opt(PositiveInt, 24).annotations({
    description: "Healthy probes, spread over the window, needed for level 4."
  }),
  continuousMinAvailability: opt(Ratio, 0.95).annotations({ description: "Availability needed for level 4." }),
  minDistinctPayers: opt(PositiveInt, 2).annotations({
    description:
      "Distinct payers whose confirmed settles and receipts a resource needs before they count, for level 3 and for `transactionSuccessRate`; the operator's own economic probes count alone (docs/trust.md)."
  }),
  delistAfterHours: opt(PositiveInt, 72).annotations({
    description:
      "A listed resource whose probes have all been unhealthy this long leaves discovery, search and routes (kept with its history) until a healthy probe lists it again."
  }),
  unlistedRetentionHours: opt(PositiveInt, 168).annotations({
    description:
      "An unlisted resource `/v1/validate` created is deleted, with its observations, once nobody has validated it for this long (checked after each probe cycle); one an operator quarantined stays."
  })
})
export type VerificationConfig = typeof VerificationConfig.Type

/**
 * What strangers may add to the catalog and how much of the probe workload it may take
 * (docs/trust.md). Counted over untrusted entries (registration, import, bazaar; not the catalog
 * file's or what an operator listed), in the store, so instances sharing a database share them.
 */
export const IngestionConfig = Schema.Struct({
  maxPerSource: opt(PositiveInt, 10_000).annotations({
    description:
      "Untrusted entries (not the catalog file's, not operator-listed; docs/trust.md) one source may hold: `registration`, `bazaar`, each `import:<id>`."
  }),
  maxPerOrigin: opt(PositiveInt, 100).annotations({
    description: "Untrusted entries at one origin (scheme, host, port), whoever added them."
  }),
  maxPerPrincipal: opt(PositiveInt, 500).annotations({
    description:
      "Untrusted entries one principal added by registration (the API key's principal, `anonymous` in open mode) or by the bazaar extension (the payer)."
  }),
  maxPerPayee: opt(PositiveInt, 100).annotations({ description: "Untrusted entries naming one `payTo`." }),
  retireAfterHours: opt(PositiveInt, 168).annotations({
    description:
      "An untrusted entry unhealthy this long is deleted with its observations (after each probe cycle); one an operator quarantined stays."
  }),
  maxBackoffIntervals: opt(PositiveInt, 64).annotations({
    description:
      "An unhealthy untrusted entry is probed every 2^k intervals (k: whole intervals it has been unhealthy), at most this many."
  }),
  concurrency: opt(PositiveInt, 4).annotations({
    description:
      "Probes in flight for untrusted entries, in their own lane beside the trusted one (`probes.concurrency`)."
  }),
  untrustedPayeeStanding: opt(Schema.Boolean, false).annotations({
    description:
      "Whether untrusted entries' probe evidence can give a payee its settle standing. Off: a settle passes the payee check only through a trusted entry paying it (the catalog file's, or one an operator listed), so a stranger's registration of a URL naming a payee never opens settles to it; refusals (quarantine, denied providers) still look at every entry (docs/trust.md)."
  })
})
export type IngestionConfig = typeof IngestionConfig.Type
