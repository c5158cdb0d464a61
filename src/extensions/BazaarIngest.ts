import { Context, Duration, Effect, Either, Fiber, Layer, Option } from "effect"
import { AppConfig } from "../config.js"
import type { CatalogEntry } from "../domain/resources.js"
import { ResourcesRepo } from "../store/ResourcesRepo.js"
import { type BazaarStatus, readBazaar, rejected } from "./bazaar.js"
import { SchemaValidator } from "./SchemaValidator.js"

/**
 * How long the answer of a paid request waits for the catalog write of its bazaar extension
 * before saying `processing` and letting the write finish on its own. The payment is already
 * settled or verified by then: the wait only decides between `success` and `processing`.
 */
const CATALOG_WAIT = Duration.millis(250)

/**
 * Ingestion of the bazaar extension on `/x402/verify` and `/x402/settle` (docs/decisions.md,
 * Bazaar ingestion). It runs after the payment's answer is known and never fails: every outcome,
 * a refusal or a store failure included, is a status for the `EXTENSION-RESPONSES` header.
 */
export class BazaarIngest extends Context.Tag("sextant/BazaarIngest")<BazaarIngest, Effect.Effect.Success<typeof make>>() {
  static readonly Live = Layer.effect(BazaarIngest, Effect.suspend(() => make)).pipe(Layer.provide(SchemaValidator.Live))
}

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const resources = yield* ResourcesRepo
  const validator = yield* SchemaValidator

  /**
   * A new URL becomes an unlisted `DISCOVERED` entry (source "bazaar") that a healthy probe lists;
   * one the extension catalogued before is updated and keeps its listing; a URL another source
   * already catalogues (the file, an import, a validation) is left as that source wrote it.
   */
  const catalog = (entry: CatalogEntry, path: string) =>
    Effect.gen(function* () {
      if (entry.resource.type === "http") {
        const existing = yield* resources.findByUrl(entry.resource.url)
        if (Option.isSome(existing) && existing.value.listing.source !== "bazaar") return
      }
      yield* resources.insertUnlisted(entry, "bazaar", {
        actor: "bazaar",
        reason: `declared by the bazaar extension of a payment through ${path}; unlisted until a healthy probe`
      })
    })

  /**
   * The bazaar status for a request whose payment was (`paid`) or was not accepted; null when it
   * carries no bazaar extension. Validation runs here; the catalog write runs in its own fiber,
   * awaited at most CATALOG_WAIT.
   */
  const respond = (request: { readonly paymentPayload: unknown; readonly paymentRequirements: unknown }, paid: boolean, path: string) =>
    Effect.gen(function* () {
      const reading = yield* Effect.try(() => readBazaar(request, config.asset)).pipe(
        Effect.orElseSucceed(() => ({ _tag: "Rejected", reason: "the extension could not be read" }) as const)
      )
      if (reading._tag === "Absent") return null
      if (reading._tag === "Rejected") return rejected(reading.reason)
      if (!paid) return rejected("the payment was not accepted, so nothing was catalogued")
      const valid = yield* validator.validate(reading.info, reading.schema)
      if (Either.isLeft(valid)) return rejected(valid.left)
      const write = yield* Effect.forkDaemon(
        catalog(reading.entry, path).pipe(
          Effect.as<BazaarStatus>({ status: "success" }),
          Effect.catchAllCause((cause) =>
            Effect.as(Effect.logWarning("bazaar ingestion failed", cause), rejected("the resource could not be catalogued: store failure"))
          )
        )
      )
      return yield* Fiber.join(write).pipe(
        Effect.timeout(CATALOG_WAIT),
        Effect.orElseSucceed((): BazaarStatus => ({ status: "processing" }))
      )
    }).pipe(
      Effect.catchAllCause(() => Effect.succeed<BazaarStatus | null>(rejected("the extension could not be processed"))),
      Effect.withSpan("BazaarIngest.respond")
    )

  return { respond }
})
