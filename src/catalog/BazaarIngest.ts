import { Context, Duration, Effect, Either, Fiber, Layer } from "effect"
import { AppConfig } from "../config.js"
import { InvalidRequest } from "../domain/errors.js"
import { PrincipalId } from "../domain/ids.js"
import type { CatalogEntry } from "../domain/resources.js"
import {
  type BazaarStatus,
  bazaarSchemaRefusal,
  hasBazaar,
  readBazaar,
  rejected,
  withBazaarStatus
} from "../extensions/bazaar.js"
import { SchemaValidator } from "../extensions/SchemaValidator.js"
import { CatalogWritesRepo } from "../store/CatalogWritesRepo.js"
import { admitted } from "./admitEntries.js"
import { quotaKeys } from "./ingestionQuota.js"

/**
 * How long the answer of a paid request waits for the catalog write of its bazaar extension
 * before saying `processing` and letting the write finish on its own. The payment is already
 * settled by then: the wait only decides between `success` and `processing`.
 */
const CATALOG_WAIT = Duration.millis(250)

/** What a settle did, as far as ingestion cares: whether it was settled by this request, and by whom. */
export interface SettledPayment {
  readonly success: boolean
  /** False for a repeat answered from the journal: one payment catalogs once, whatever URL a repeat names. */
  readonly settledNow: boolean
  readonly payer: string
}

/** A verify or settle request as far as the bazaar extension cares. */
export interface PaymentRequest {
  readonly paymentPayload: unknown
  readonly paymentRequirements: unknown
}

/** What a settle gives back to `answer`: its answer to the caller, and how it settled. */
export type SettleReport<A> = Omit<SettledPayment, "success"> & { readonly answer: A }

export interface BazaarIngestShape {
  /**
   * Refuses a verify or settle whose bazaar schema this service would never evaluate (schemaGuard's
   * allow-list and bounds), before any payment is made.
   */
  readonly admit: (request: { readonly paymentPayload: unknown }) => Effect.Effect<void, InvalidRequest>
  /**
   * Runs a settle, then answers its bazaar extension whether the payment went through or not:
   * `status` is what the `EXTENSION-RESPONSES` header says (null without the extension), and a
   * settle answer carries it in its `extensionResponses` field as well. A verify never comes here
   * (docs/trust.md): it moves no money.
   */
  readonly answer: <A extends { readonly success: boolean; readonly extensionResponses?: unknown }, E, R>(
    request: PaymentRequest,
    path: string,
    payment: Effect.Effect<SettleReport<A>, E, R>
  ) => Effect.Effect<{ readonly outcome: Either.Either<A, E>; readonly status: BazaarStatus | null }, never, R>
  /**
   * The bazaar status for a settle request (`settled` null when it was refused or failed); null
   * when it carries no bazaar extension. Never fails. The catalog write runs in its own fiber,
   * awaited at most CATALOG_WAIT.
   */
  readonly respond: (
    request: PaymentRequest,
    settled: SettledPayment | null,
    path: string
  ) => Effect.Effect<BazaarStatus | null>
}

/**
 * The bazaar extension on `/x402/verify` and `/x402/settle`: a schema this service would never
 * evaluate refused before the payment, and ingestion after a settle (docs/decisions.md, Bazaar
 * ingestion; docs/trust.md). Ingestion runs after the settle's answer is known and never fails: every outcome, a
 * refusal or a store failure included, is a status for the `EXTENSION-RESPONSES` header. Only a
 * successful settle made by this request catalogs anything, and only then is the extension read:
 * a verify moves no money, and `paymentPayload.resource.url` is not covered by the payer's
 * signature, so a payment that never settles, or a repeat of one that did, must not be able to
 * name what gets catalogued.
 */
export class BazaarIngest extends Context.Tag("sextant/BazaarIngest")<BazaarIngest, BazaarIngestShape>() {
  static readonly Live = Layer.effect(
    BazaarIngest,
    Effect.suspend(() => make)
  ).pipe(Layer.provide(SchemaValidator.Live))
}

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const resources = yield* CatalogWritesRepo
  const validator = yield* SchemaValidator

  /**
   * A new (URL, payee) becomes an unlisted `DISCOVERED` entry (source "bazaar") that a healthy
   * probe lists. An entry is written once and never overwritten, by its payer or another; a URL
   * another source catalogues (the file, an import, a registration) is left as that source wrote
   * it. The ingestion quotas count the payer as the principal.
   */
  const catalog = (entry: CatalogEntry, payer: string, path: string) =>
    Effect.gen(function* () {
      const atUrl = yield* resources.byUrls([entry.resource.url])
      if (atUrl.some((r) => r.source !== "bazaar" && r.source !== "validate"))
        return rejected("the URL is catalogued by another source")
      if (atUrl.some((r) => r.id === entry.resource.id))
        return rejected("an entry for this URL and payee is catalogued already; it is not rewritten")
      const { refused } = yield* admitted(resources, config.ingestion, "bazaar", [
        { item: entry, keys: quotaKeys(entry, PrincipalId.make(payer)) }
      ])
      if (refused[0] !== undefined) return rejected(`quota: ${refused[0].reason}`)
      yield* resources.insertUnlisted(entry, "bazaar", {
        actor: payer,
        reason: `declared by the bazaar extension of a payment settled through ${path}; unlisted until a healthy probe`
      })
      return { status: "success" } satisfies BazaarStatus
    })

  const respond = (request: PaymentRequest, settled: SettledPayment | null, path: string) =>
    Effect.gen(function* () {
      if (!hasBazaar(request.paymentPayload)) return null
      if (settled === null || !settled.success)
        return rejected("the payment was not settled, so nothing was catalogued")
      if (!settled.settledNow) return rejected("this payment was settled before; a payment catalogs once")
      const reading = yield* Effect.try(() => readBazaar(request, config.asset)).pipe(
        Effect.orElseSucceed(() => ({ _tag: "Rejected", reason: "the extension could not be read" }) as const)
      )
      if (reading._tag === "Absent") return null
      if (reading._tag === "Rejected") return rejected(reading.reason)
      const valid = yield* validator.validate(reading.info, reading.schema)
      if (Either.isLeft(valid)) return rejected(valid.left)
      const write = yield* Effect.forkDaemon(
        catalog(reading.entry, settled.payer, path).pipe(
          Effect.catchAllCause((cause) =>
            Effect.as(
              Effect.logWarning("bazaar ingestion failed", cause),
              rejected("the resource could not be catalogued: store failure")
            )
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

  const admit = (request: { readonly paymentPayload: unknown }) => {
    const refused = bazaarSchemaRefusal(request.paymentPayload)
    return refused === null ? Effect.void : new InvalidRequest({ message: refused })
  }

  const answer = <A extends { readonly success: boolean; readonly extensionResponses?: unknown }, E, R>(
    request: PaymentRequest,
    path: string,
    payment: Effect.Effect<SettleReport<A>, E, R>
  ) =>
    Effect.flatMap(
      Effect.either(payment),
      (outcome): Effect.Effect<{ readonly outcome: Either.Either<A, E>; readonly status: BazaarStatus | null }> =>
        Either.isLeft(outcome)
          ? Effect.map(respond(request, null, path), (status) => ({ outcome: Either.left(outcome.left), status }))
          : Effect.map(
              respond(request, { ...outcome.right, success: outcome.right.answer.success }, path),
              (status) => ({
                outcome: Either.right(withBazaarStatus(outcome.right.answer, status)),
                status
              })
            )
    )

  return { respond, admit, answer } satisfies BazaarIngestShape
})
