import { Clock, Context, Effect, Either, Fiber, Layer, Option, Schema } from "effect"
import { describeParseError } from "../domain/issues.js"
import { createHash, randomUUID } from "node:crypto"
import { AppConfig } from "../config.js"
import {
  BadGateway,
  BadRequest,
  Conflict,
  notFound,
  type NotFound,
  type PolicyDenied,
  type TooManyRequests,
  Unprocessable
} from "../domain/errors.js"
import { IdempotencyKey, type SettleRequest, SettleResponse, type SettlementRecord } from "../domain/x402.js"
import type { AgentPolicy } from "../domain/policy.js"
import { policyContext } from "../policy/evaluate.js"
import { canonicalize } from "../receipts/canonicalJson.js"
import { ResourcesRepo } from "../store/ResourcesRepo.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { FacilitatorPool, type SettleOutcome } from "../x402/FacilitatorPool.js"
import { readSettleRequest } from "./request.js"
import { type NamedPolicy, paymentDenial, paymentOption, payeeDenial, transferMismatch, worstCaseUnits } from "./rules.js"
import { type Completion, type JournalRow, mayReserveAgain, SettlementJournal, storedAnswer, toRecord } from "./SettlementJournal.js"
import { decodePayment } from "./transfer.js"

type SettleAnswer = typeof SettleResponse.Type

export interface SettleInput {
  /**
   * The stock body `{x402Version, paymentPayload, paymentRequirements}`, plus this service's
   * optional fields; decoded here with the same SettleRequest schema the HTTP layer uses.
   */
  readonly body: unknown
  /** The `Idempotency-Key` header, when sent. */
  readonly idempotencyKey: string | undefined
  /** The API key's principal; null in open mode, where the payer address is the principal. */
  readonly principal: string | null
}

export type SettleError = BadRequest | PolicyDenied | Conflict | Unprocessable | TooManyRequests | BadGateway

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")

/** sha256 of the canonical JSON, so key order and whitespace do not make two requests differ. */
const contentHash = (value: unknown) =>
  Either.mapBoth(canonicalize(value), {
    onLeft: (e) => new BadRequest({ error: "BAD_REQUEST", message: `the request cannot be hashed: ${e.message}` }),
    onRight: sha256
  })

/**
 * This service's own fields are taken out of paymentRequirements before forwarding, so a backend
 * receives the stock body; the payment payload itself goes as signed.
 */
const stockBody = (body: SettleRequest) => {
  const { amountUsd: _amountUsd, servicePolicy: _servicePolicy, ...requirements } = body.paymentRequirements
  return { ...body, paymentRequirements: requirements }
}

const decodeAnswer = Schema.decodeUnknown(SettleResponse)

/**
 * How a 409 names the settlement it met: by id to its own principal only. Another principal's
 * settlement of the same payment is not named, since its id says nothing the caller may read.
 */
const naming = (row: JournalRow, principal: string) =>
  row.principal === principal
    ? { entry: `settlement ${row.id}`, record: ` (GET /x402/settlements/${row.id})` }
    : { entry: "the settlement", record: "" }

/** A repeat of a journaled request: the stored answer, or 409 when there is none to give. */
const replay = (row: JournalRow, requestHash: string, byKey: boolean, principal: string): Effect.Effect<SettleAnswer, SettleError> => {
  const { entry, record } = naming(row, principal)
  if (row.request_hash !== requestHash) {
    return Effect.fail(
      byKey
        ? new Conflict({
            error: "IDEMPOTENCY_KEY_REUSED",
            message: `the Idempotency-Key was already used for a different request (${entry})`
          })
        : new Conflict({
            error: "PAYMENT_ALREADY_SUBMITTED",
            message: `this signed payment was already submitted with different requirements (${entry})`
          })
    )
  }
  if (row.state === "pending") {
    return Effect.fail(
      new Conflict({ error: "SETTLEMENT_IN_PROGRESS", message: `${entry} of this payment is still in progress` })
    )
  }
  if (row.state === "indeterminate") {
    return Effect.fail(
      new Conflict({
        error: "SETTLEMENT_INDETERMINATE",
        message: `${entry} of this payment was interrupted and its outcome is unknown; it is never ` +
          `re-submitted automatically. An operator reconciles it with the ledger${record}`
      })
    )
  }
  const answer = storedAnswer(row)
  if (answer === null) return Effect.dieMessage(`settlement ${row.id} is ${row.state} without a stored answer`)
  const body = answer.body as { error: string; message: string }
  if (answer.status === 200) return Effect.orDie(decodeAnswer(answer.body))
  return Effect.fail(answer.status === 422 ? new Unprocessable(body) : new BadGateway(body))
}

const decodeKey = Schema.decodeUnknownEither(IdempotencyKey)

/** The `Idempotency-Key` header when sent: 1 to 200 characters, else 400. */
const readIdempotencyKey = (key: string | undefined): Either.Either<string | undefined, BadRequest> =>
  key === undefined
    ? Either.right(undefined)
    : Either.mapLeft(decodeKey(key), (e) => new BadRequest({ error: "BAD_REQUEST", message: describeParseError(e) }))

const errorsOf = (outcome: SettleOutcome) =>
  "failures" in outcome ? outcome.failures.map((f) => ({ backendId: f.backendId, error: f.detail })) : []

/** How a forwarding outcome is journaled and answered. */
const conclude = (id: string, outcome: SettleOutcome): { completion: Completion; answer: Either.Either<SettleAnswer, SettleError> } => {
  const errors = errorsOf(outcome)
  const refused = (
    state: Completion["state"],
    error: Unprocessable | BadGateway,
    status: number,
    { backendId = null, submitted }: { readonly backendId?: string | null; readonly submitted: boolean }
  ) => ({
    completion: {
      state,
      submitted,
      backendId,
      transaction: null,
      payer: null,
      errors,
      answer: { status, body: { error: error.error, message: error.message } }
    },
    answer: Either.left(error)
  })
  switch (outcome._tag) {
    case "Answered": {
      const { response, backendId } = outcome
      const refusal = response.success ? [] : [{ backendId, error: response.errorReason ?? response.errorMessage ?? "settle refused" }]
      return {
        completion: {
          state: response.success ? "settled" : "failed",
          submitted: true,
          backendId,
          transaction: response.transaction === "" ? null : response.transaction,
          payer: response.payer ?? null,
          errors: [...errors, ...refusal],
          answer: { status: 200, body: response }
        },
        answer: Either.right(response)
      }
    }
    case "Indeterminate":
      return refused(
        "indeterminate",
        new BadGateway({
          error: "SETTLEMENT_INDETERMINATE",
          message: `facilitator "${outcome.backendId}" gave no usable answer, so the payment may or may not have been ` +
            `submitted; it was not sent to another facilitator. Settlement ${id} is journaled as indeterminate ` +
            `(GET /x402/settlements/${id})`
        }),
        502,
        { backendId: outcome.backendId, submitted: true }
      )
    case "Failed":
      return refused(
        "failed",
        errors.length === 0
          ? new BadGateway({ error: "NO_HEALTHY_FACILITATOR", message: "no facilitator supporting this payment is currently healthy" })
          : new BadGateway({
              error: "ALL_FACILITATORS_FAILED",
              message: `every eligible facilitator failed: ${errors.map((e) => `${e.backendId}: ${e.error}`).join("; ")}`
            }),
        502,
        { submitted: false }
      )
    case "Unsupported":
      return refused("failed", outcome.error, 422, { submitted: false })
  }
}

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const journal = yield* SettlementJournal
  const pool = yield* FacilitatorPool
  const reader = yield* EvidenceReader
  const repo = yield* ResourcesRepo
  const decimals = config.asset.decimals

  /**
   * The policies a settle must pass: the request's servicePolicy and, for an API-key principal,
   * the policy configured with its key (every entry of the principal that has one).
   */
  const buyerPolicies = (servicePolicy: AgentPolicy, principal: string | null): ReadonlyArray<NamedPolicy> => [
    { name: "servicePolicy", policy: servicePolicy },
    ...config.apiKeys.flatMap((k) =>
      k.principal === principal && k.policy !== undefined ? [{ name: `the policy of principal "${k.principal}"`, policy: k.policy }] : []
    )
  ]

  /**
   * Forwarding and recording its outcome run to the end even if the caller goes away (a daemon
   * fiber the caller only joins): an entry left `pending` would only be resolved, as
   * indeterminate, by the next restart. The backend timeouts inside still apply.
   */
  const forward = (id: string, body: SettleRequest, network: string, scheme: string, payTo: string) =>
    Effect.gen(function* () {
      const outcome = yield* pool.settle(stockBody(body), network, scheme)
      const { completion, answer } = conclude(id, outcome)
      const at = yield* Clock.currentTimeMillis
      yield* journal.complete(id, completion, at).pipe(
        Effect.catchAll((e) => Effect.logError(`settlement ${id}: recording its outcome failed; it will be indeterminate after a restart`, e))
      )
      if (completion.state === "settled") {
        // The money moved: the buyer gets the settle answer even if the evidence cannot be recorded.
        yield* reader.recordEconomic({
          source: "settlement",
          resourceId: null,
          payTo,
          success: true,
          transactionHash: completion.transaction,
          at: new Date(at).toISOString()
        }).pipe(
          Effect.catchAllCause((cause) =>
            Effect.logError(`settlement ${id}: settled, but recording it as evidence for payee ${payTo} failed`, cause)
          )
        )
      }
      return answer
    }).pipe(Effect.forkDaemon, Effect.flatMap(Fiber.join), Effect.flatten)

  /**
   * The settle pipeline of DESIGN.md, failing closed at each step: shape -> buyer policies
   * (servicePolicy and the principal's) on the worst-case spend -> payee evidence -> the signed transfer against the requirements -> one
   * journal transaction (idempotency, spend window, fee budget, `pending` entry) -> backends with
   * failover -> `settled` / `failed` / `indeterminate` -> answer.
   *
   * The payment is identified by its decoded transaction, so the body's shape and the transaction
   * are read first; then a repeat of a journaled request is answered before any other step: it
   * gets the stored answer (or 409) whatever the backends' health, the budgets or the evidence are
   * now, and never reserves budget twice. The journal transaction looks again, for repeats that race.
   * The exception is an entry released because it never reached a backend: a retry of that payment
   * goes through the whole pipeline again and reserves anew.
   */
  const settle = (input: SettleInput): Effect.Effect<SettleAnswer, SettleError> =>
    Effect.gen(function* () {
      const idempotencyKey = yield* readIdempotencyKey(input.idempotencyKey)
      const { request, terms, transactionXdr } = yield* readSettleRequest(input.body, config.asset.assetContract)
      const { paymentId, transfer } = yield* decodePayment(transactionXdr, terms.network)
      const principal = input.principal ?? transfer.from
      // What is asked of this payment: a repeat must ask the same, whatever wrapper it comes in.
      const requestHash = yield* contentHash({
        x402Version: request.x402Version,
        paymentId,
        paymentRequirements: request.paymentRequirements
      })
      const earlier = yield* Effect.orDie(journal.find({ principal, idempotencyKey, paymentId }))
      if (Option.isSome(earlier) && !mayReserveAgain(earlier.value, requestHash)) {
        return yield* replay(earlier.value.row, requestHash, earlier.value.byKey, principal)
      }

      yield* pool.checkKind(terms.network, terms.scheme)

      const nowMs = yield* Clock.currentTimeMillis
      const context = policyContext(config, new Date(nowMs))
      const worst = worstCaseUnits(terms, transfer)
      const option = paymentOption(terms, worst, decimals)
      const policies = buyerPolicies(terms.policy, input.principal)
      const priceDenial = paymentDenial(policies, option, context)
      if (priceDenial) return yield* Effect.fail(priceDenial)

      const records = yield* Effect.orDie(repo.byPayTo(terms.payTo))
      const evidence = new Map((yield* reader.forPayTo(terms.payTo)).map((e) => [e.resourceId, e]))
      const candidates = records.map((r) => ({ providerId: r.provider.id, evidence: evidence.get(r.resource.id) }))
      const payeeRefusal = payeeDenial(policies, option, candidates, context)
      if (payeeRefusal) return yield* Effect.fail(payeeRefusal)

      const mismatch = transferMismatch(terms, transfer, decimals)
      if (mismatch) return yield* Effect.fail(mismatch)

      const reservation = yield* Effect.orDie(
        journal.reserve(
          {
            id: randomUUID(),
            idempotencyKey,
            paymentId,
            requestHash,
            principal,
            payer: transfer.from,
            network: terms.network,
            scheme: terms.scheme,
            asset: terms.asset,
            payTo: terms.payTo,
            amount: terms.amount,
            worstCaseUnits: worst,
            feeStroops: BigInt(config.budgets.feeCeilingStroops)
          },
          config.budgets,
          decimals,
          nowMs
        )
      )
      switch (reservation._tag) {
        case "Existing":
          return yield* replay(reservation.row, requestHash, reservation.byKey, principal)
        case "Refused":
          return yield* Effect.fail(reservation.error)
        case "Reserved":
          return yield* forward(reservation.id, request, terms.network, terms.scheme, terms.payTo)
      }
    })

  /** API-key principals, who may read only their own settlements; the open mode reads any. */
  const keyPrincipals = new Set(config.apiKeys.map((k) => k.principal))

  /**
   * One journal entry for `GET /x402/settlements/{id}`. Another principal's entry is 404 to an
   * API-key principal, exactly as a missing one, so ids of others' payments cannot be probed.
   */
  const readsAll = (principal: string | null) => principal === null || !keyPrincipals.has(principal)

  const get = (id: string, principal: string | null): Effect.Effect<SettlementRecord, NotFound> =>
    journal.get(id).pipe(
      Effect.orDie,
      Effect.flatMap((row) =>
        Option.isSome(row) && (readsAll(principal) || row.value.principal === principal)
          ? Effect.succeed(toRecord(row.value, decimals))
          : Effect.fail(notFound("settlement", id))
      )
    )

  /** The journal for reconciliation (e.g. every `indeterminate` entry), newest first, scoped like `get`. */
  const list = (
    query: { readonly state?: SettlementRecord["state"]; readonly before?: string; readonly limit?: number },
    principal: string | null
  ): Effect.Effect<ReadonlyArray<SettlementRecord>> =>
    journal
      .list({
        limit: query.limit ?? 50,
        ...(query.state !== undefined ? { state: query.state } : {}),
        ...(query.before !== undefined ? { beforeMs: Date.parse(query.before) } : {}),
        ...(principal !== null && keyPrincipals.has(principal) ? { principal } : {})
      })
      .pipe(
        Effect.orDie,
        Effect.map((rows) => rows.map((row) => toRecord(row, decimals)))
      )

  return { settle, get, list }
})

/**
 * Crash recovery: entries left `pending` by a previous run become `indeterminate`. Only the
 * serving process runs it, before it takes any settle; a second process on the same store (the
 * MCP server) must not, or it would mark the server's in-flight settles.
 */
const recover = Effect.gen(function* () {
  const journal = yield* SettlementJournal
  const recovered = yield* Effect.flatMap(Clock.currentTimeMillis, journal.recoverPending).pipe(Effect.orDie)
  if (recovered.length > 0) {
    yield* Effect.logWarning(`settlements interrupted by a restart are now indeterminate and will not be re-submitted: ${recovered.join(", ")}`)
  }
})

/** `/x402/settle` and `/x402/settlements/{id}`. */
export class Settlement extends Context.Tag("sextant/Settlement")<Settlement, Effect.Effect.Success<typeof make>>() {
  static readonly Live = Layer.effect(Settlement, make).pipe(Layer.provide(SettlementJournal.Live))
  static readonly Recovery = Layer.effectDiscard(recover).pipe(Layer.provide(SettlementJournal.Live))
}
