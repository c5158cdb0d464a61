import { afterEach, describe, expect } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Either, Fiber, Layer, Schema, TestClock, TestContext } from "effect"
import { FoundationLive, PaymentsLive } from "../src/app.js"
import {
  type BudgetsConfig,
  type Config,
  decodeConfigFile,
  type FacilitatorBackend,
  loadConfig
} from "../src/config.js"
import { InvalidRequest } from "../src/domain/errors.js"
import { PrincipalId, ResourceId, SettlementId } from "../src/domain/ids.js"
import { describeParseError } from "../src/domain/issues.js"
import type { AgentPolicy } from "../src/domain/policy.js"
import type { FacilitatorRequest } from "../src/domain/x402.js"
import { IdempotencyKey, SettleRequest } from "../src/domain/x402.js"
import { Settlement } from "../src/settlement/Settlement.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"
import { FacilitatorPool } from "../src/x402/FacilitatorPool.js"
import { evidence, option, payee, record } from "./fixtures/evidence.js"
import { type FixtureFacilitator, startFacilitator } from "./fixtures/facilitator.js"
import { type SignedPayment, seededBuyer, settleBody, signedPayment } from "./fixtures/stellarPayment.js"
import { it, runWith } from "./support/effectTest.js"
import { LOOPBACK, pollUntilEffect } from "./support/poll.js"

const NOW = Date.parse("2025-06-01T12:00:00.000Z")
const VERIFIED = payee(1)
const NEVER_PROBED = payee(2)
const NO_CHALLENGE = payee(3)
const QUARANTINED = payee(4)
const NOT_IN_CATALOG = payee(5)
const OTHER_ASSET = "CCW67TSZV3SSS2HXMBQ5JFGCKJNXKZM7UQUWUZPUTHXSTZLEO7SJMI75"

const catalog = [
  record("alpha.rwa.inspect", [option({ payTo: VERIFIED })]),
  record("beta.rwa.inspect", [option({ payTo: NEVER_PROBED })]),
  record("gamma.rwa.inspect", [option({ payTo: NO_CHALLENGE })]),
  record("delta.rwa.inspect", [option({ payTo: QUARANTINED })])
]
const knownEvidence = [
  evidence("alpha.rwa.inspect", new Date(NOW)),
  evidence("gamma.rwa.inspect", new Date(NOW), { status: "LIVE", verificationLevel: 1, validChallengeSeen: false }),
  evidence("delta.rwa.inspect", new Date(NOW), { status: "QUARANTINED" })
]

const fixtures: Array<FixtureFacilitator> = []
const fixture = (...args: Parameters<typeof startFacilitator>) => {
  const f = startFacilitator(...args)
  fixtures.push(f)
  return f
}
const baseConfig = Either.getOrThrow(loadConfig(undefined, {}))

type EvidenceLayer = Layer.Layer<EvidenceReader | EvidenceRecorder>
const knownEvidenceLayer: EvidenceLayer = EvidenceReader.Test(catalog, knownEvidence)

const layerFor = (config: Config, database: string, evidenceLayer: EvidenceLayer = knownEvidenceLayer) => {
  // Health polls happen when a test asks (refresh): a test moving the TestClock across a poll's
  // timeout while its real loopback answer is still on the way would mark a healthy backend down.
  const pool = FacilitatorPool.fromOptions({
    pollInterval: Duration.days(1),
    requestTimeout: Duration.days(1),
    settleTimeout: Duration.seconds(60)
  })
  // Built as `serve` builds it: crash recovery runs before the pipeline takes a request.
  return PaymentsLive(evidenceLayer, pool, "server").pipe(
    Layer.provideMerge(FoundationLive({ ...config, catalog, database }))
  )
}

type Services = Layer.Layer.Success<ReturnType<typeof layerFor>>

/**
 * `program` against a fresh service graph after one health poll, on a TestClock set to NOW before
 * the services start, so the poll schedule begins at NOW.
 */
const onServices = <A, E>(
  backends: ReadonlyArray<FacilitatorBackend>,
  program: Effect.Effect<A, E, Services>,
  {
    budgets = {},
    database = ":memory:",
    apiKeys = [],
    evidence = knownEvidenceLayer
  }: {
    budgets?: Partial<BudgetsConfig>
    database?: string
    apiKeys?: Config["apiKeys"]
    evidence?: EvidenceLayer
  } = {}
) => {
  const config: Config = {
    ...baseConfig,
    facilitators: backends,
    budgets: { ...baseConfig.budgets, ...budgets },
    apiKeys
  }
  const withServices = Effect.gen(function* () {
    yield* Effect.flatMap(FacilitatorPool, (p) => p.refresh)
    return yield* program
  }).pipe(Effect.provide(layerFor(config, database, evidence)))
  return Effect.zipRight(TestClock.setTime(NOW), withServices)
}

/** A signed payment (the SDK signs asynchronously). */
const paymentTo = (...args: Parameters<typeof signedPayment>) => Effect.promise(() => signedPayment(...args))

const body = ({ requirements, payment }: SignedPayment, extras: Parameters<typeof settleBody>[2] = {}) =>
  settleBody(payment, requirements, extras) as unknown as FacilitatorRequest

/** The body and key decoded as the HTTP layer decodes them (its 400s named the same way), then settled. */
const settle = (b: FacilitatorRequest, idempotencyKey?: string, principal: string | null = null) =>
  Effect.either(
    Effect.gen(function* () {
      const decoded = yield* Effect.mapError(
        Effect.all([
          Schema.decodeUnknown(SettleRequest)(b, { errors: "all" }),
          Schema.decodeUnknown(Schema.UndefinedOr(IdempotencyKey))(idempotencyKey)
        ]),
        (e) => new InvalidRequest({ message: describeParseError(e) })
      )
      const [request, key] = decoded
      return yield* Effect.flatMap(Settlement, (s) =>
        s.settle({ request, idempotencyKey: key, principal: principal === null ? null : PrincipalId.make(principal) })
      )
    })
  )

const rows = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<{
      id: string
      state: string
      backend_id: string | null
      transaction_hash: string | null
      payer: string | null
      errors_json: string
      principal: string
      fee_stroops: number
    }>`SELECT id, state, backend_id, transaction_hash, payer, errors_json, principal, fee_stroops FROM settlements ORDER BY rowid`
)

const errorOf = <A, E>(result: Either.Either<A, E>) => (Either.isLeft(result) ? result.left : undefined)

/**
 * The cross-process budget test runs this file's own service graph twice more, each in its own OS
 * process (`bun test/settlement.test.ts` with this variable set to a job): only separate processes
 * on one database file show whether the reservation is atomic across connections, since one
 * process's fibers share one connection and run its statements one at a time.
 */
const BUDGET_WORKER = "SEXTANT_SETTLEMENT_BUDGET_WORKER"
const READY = "READY"
const OUTCOMES = "OUTCOMES "

interface BudgetJob {
  readonly backendUrl: string
  readonly database: string
  readonly buyerSeeds: ReadonlyArray<number>
  /** One API-key principal per round; each round settles an equal share of the payments as it. */
  readonly principals: ReadonlyArray<string>
  readonly budgets: Partial<BudgetsConfig>
}

/**
 * Worker side: builds the graph and the payments, then for each round says READY, waits for "go"
 * on stdin and settles that round's payments all at once; finally prints how each settle ended.
 */
const runBudgetWorker = async (job: BudgetJob) => {
  const payments = await Promise.all(
    job.buyerSeeds.map((seed) => signedPayment(VERIFIED, { buyer: seededBuyer(seed) }))
  )
  const perRound = payments.length / job.principals.length
  const stdin = console[Symbol.asyncIterator]()
  // A process of its own, not a test: the one effect runs on a TestClock built for it.
  const outcomes = await runWith(
    TestContext.TestContext,
    onServices(
      [{ id: "a", url: job.backendUrl }],
      Effect.gen(function* () {
        // A first run through the pipeline (refused by price, before any reservation), so that the
        // rounds in both processes are equally warm and race from their first statement.
        yield* settle(body(payments[0]!, { servicePolicy: { maxPricePerRequestUsd: 0 } }))
        const results = []
        for (const [round, principal] of job.principals.entries()) {
          yield* Effect.promise(() => {
            console.log(READY)
            return stdin.next()
          })
          const batch = payments.slice(round * perRound, (round + 1) * perRound)
          results.push(
            ...(yield* Effect.all(
              batch.map((p) => settle(body(p), undefined, principal)),
              { concurrency: "unbounded" }
            ))
          )
        }
        return results
      }),
      { budgets: job.budgets, database: job.database }
    )
  )
  console.log(OUTCOMES + JSON.stringify(outcomes.map((r) => (Either.isRight(r) ? "settled" : r.left.error))))
}

/** Test side: a worker process, read line by line; `next(prefix)` waits for its next such line. */
const startBudgetWorker = (job: BudgetJob) => {
  const child = Bun.spawn([process.execPath, import.meta.path], {
    env: { ...process.env, [BUDGET_WORKER]: JSON.stringify(job) },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe"
  })
  const reader = child.stdout.getReader()
  const decoder = new TextDecoder()
  let buffered = ""
  const next = async (prefix: string): Promise<string> => {
    for (;;) {
      const end = buffered.indexOf("\n")
      if (end >= 0) {
        const line = buffered.slice(0, end)
        buffered = buffered.slice(end + 1)
        if (line.startsWith(prefix)) return line.slice(prefix.length)
        continue
      }
      const read = await reader.read()
      if (read.done)
        throw new Error(`budget worker ended before "${prefix}": ${await new Response(child.stderr).text()}`)
      buffered += decoder.decode(read.value, { stream: true })
    }
  }
  return {
    ready: () => next(READY),
    go: () => child.stdin.write("go\n"),
    outcomes: async () => {
      const outcomes = JSON.parse(await next(OUTCOMES)) as Array<string>
      child.stdin.end()
      await child.exited
      return outcomes
    }
  }
}

if (process.env[BUDGET_WORKER] !== undefined) {
  await runBudgetWorker(JSON.parse(process.env[BUDGET_WORKER]) as BudgetJob)
  process.exit(0)
}

describe("settlement pipeline", () => {
  afterEach(async () => {
    await Promise.all(fixtures.splice(0).map((f) => f.stop()))
  })

  it.effect(
    "a valid payment settles once: journaled settled, evidence recorded, repeats answered from the journal",
    () =>
      Effect.gen(function* () {
        const a = fixture()
        const p = yield* paymentTo(VERIFIED)
        const other = yield* paymentTo(VERIFIED)
        const out = yield* onServices(
          [{ id: "a", url: a.url }],
          Effect.gen(function* () {
            const first = yield* settle(body(p, { amountUsd: 0.001 }), "client-key-1")
            const again = yield* settle(body(p, { amountUsd: 0.001 }), "client-key-1")
            // Without a key the payment's hash is the key: the same signed payment finds the same entry.
            const unkeyed = yield* settle(body(p, { amountUsd: 0.001 }))
            const reusedKey = yield* settle(body(other), "client-key-1")
            const changedRequirements = yield* settle(body(p, { servicePolicy: { maxPricePerRequestUsd: 1 } }))
            // A check that refuses now (this price limit) does not hide that the payment was submitted.
            const refusedByPolicyNow = yield* settle(body(p, { servicePolicy: { maxPricePerRequestUsd: 0.0001 } }))
            const journal = yield* rows
            const record = yield* Effect.flatMap(Settlement, (s) => s.get(SettlementId.make(journal[0]!.id), null))
            const evidenceAfter = yield* Effect.flatMap(EvidenceReader, (r) =>
              r.forResource(ResourceId.make("alpha.rwa.inspect"))
            )
            return {
              first,
              again,
              unkeyed,
              reusedKey,
              changedRequirements,
              refusedByPolicyNow,
              journal,
              record,
              evidenceAfter
            }
          })
        )
        expect(out.first).toEqual(Either.right(expect.objectContaining({ success: true, network: "stellar:testnet" })))
        const answer = Either.getOrThrow(out.first)
        expect(out.again).toEqual(Either.right(answer))
        expect(out.unkeyed).toEqual(Either.right(answer))
        expect(errorOf(out.reusedKey)).toMatchObject({ error: "IDEMPOTENCY_KEY_REUSED" })
        expect(errorOf(out.changedRequirements)).toMatchObject({ error: "PAYMENT_ALREADY_SUBMITTED" })
        expect(errorOf(out.refusedByPolicyNow)).toMatchObject({ error: "PAYMENT_ALREADY_SUBMITTED" })
        expect(a.calls("/settle")).toBe(1)
        expect(out.journal).toHaveLength(1)
        expect(out.journal[0]).toMatchObject({
          state: "settled",
          backend_id: "a",
          transaction_hash: answer.transaction
        })
        expect(out.record).toMatchObject({
          state: "settled",
          idempotencyKey: "client-key-1",
          payTo: VERIFIED,
          amount: "10000",
          worstCaseUsd: 0.001,
          backendId: "a",
          errors: []
        })
        expect(out.record.payer).toMatch(/^G/)
        expect(out.record.principal).toBe<unknown>(out.record.payer!)
        // A settle answer alone lifts nothing: only the ledger confirms a payment (in-memory evidence has none).
        expect(out.evidenceAfter.transactionVerified).toBe(false)
        // The backend gets the stock body: this service's own fields are not forwarded.
        const forwarded = a.requests.find((r) => r.path === "/settle")?.body as {
          paymentRequirements: Record<string, unknown>
        }
        expect(forwarded.paymentRequirements.amountUsd).toBeUndefined()
        expect(forwarded.paymentRequirements.payTo).toBe(VERIFIED)
      })
  )

  it.effect(
    "one signed transaction is one payment whatever wrapper carries it: forwarded once, every wrapper answered alike",
    () =>
      Effect.gen(function* () {
        const a = fixture()
        const p = yield* paymentTo(VERIFIED)
        const signed = body(p) as unknown as {
          paymentPayload: Record<string, unknown> & { payload: { transaction: string } }
        }
        const rewrap = (payload: Record<string, unknown>) =>
          ({ ...signed, paymentPayload: { ...signed.paymentPayload, ...payload } }) as unknown as FacilitatorRequest
        const wrappers = [
          signed as unknown as FacilitatorRequest,
          rewrap({ resource: { url: "http://127.0.0.1:9/elsewhere" } }),
          rewrap({ extensions: {} }),
          rewrap({ payload: { transaction: `${signed.paymentPayload.payload.transaction}\n ` } })
        ]
        const out = yield* onServices(
          [{ id: "a", url: a.url }],
          Effect.gen(function* () {
            const answers = []
            for (const wrapper of wrappers) answers.push(yield* settle(wrapper))
            // Under an Idempotency-Key too: the key is new, the payment is not.
            answers.push(yield* settle(wrappers[1]!, "fresh-key"))
            return { answers, journal: yield* rows }
          })
        )
        const first = Either.getOrThrow(out.answers[0]!)
        expect(first).toMatchObject({ success: true })
        for (const answer of out.answers) expect(answer).toEqual(Either.right(first))
        expect(a.calls("/settle")).toBe(1)
        expect(out.journal).toHaveLength(1)
      })
  )

  it.effect(
    "Idempotency-Key: 1 to 200 characters, scoped per principal; no answer names another principal's settlement",
    () =>
      Effect.gen(function* () {
        const a = fixture()
        const buyer = (n: number) => ({ buyer: seededBuyer(100 + n) })
        const [p1, p2, p3] = [
          yield* paymentTo(VERIFIED, buyer(1)),
          yield* paymentTo(VERIFIED, buyer(2)),
          yield* paymentTo(VERIFIED, buyer(3))
        ]
        const apiKeys = ["agent-1", "agent-2"].map((principal, i) => ({ principal, sha256: String(i).repeat(64) }))
        const out = yield* onServices(
          [{ id: "a", url: a.url }],
          Effect.gen(function* () {
            const empty = yield* settle(body(p1), "", "agent-1")
            const tooLong = yield* settle(body(p1), "k".repeat(201), "agent-1")
            const first = yield* settle(body(p1), "order-1", "agent-1")
            // The same key from another principal is another request.
            const otherPrincipal = yield* settle(body(p2), "order-1", "agent-2")
            const reusedOwn = yield* settle(body(p3), "order-1", "agent-1")
            const foreignPayment = yield* settle(
              body(p1, { servicePolicy: { maxPricePerRequestUsd: 1 } }),
              undefined,
              "agent-2"
            )
            const journal = yield* rows
            const id = journal[0]!.id
            const get = (principal: PrincipalId | null) =>
              Effect.flatMap(Settlement, (s) => Effect.either(s.get(SettlementId.make(id), principal)))
            return {
              empty,
              tooLong,
              first,
              otherPrincipal,
              reusedOwn,
              foreignPayment,
              journal,
              own: yield* get(PrincipalId.make("agent-1")),
              stranger: yield* get(PrincipalId.make("agent-2")),
              open: yield* get(null)
            }
          }),
          { apiKeys }
        )
        expect(errorOf(out.empty)).toMatchObject({
          error: "INVALID_REQUEST",
          message: expect.stringContaining("Idempotency-Key")
        })
        expect(errorOf(out.tooLong)).toMatchObject({
          error: "INVALID_REQUEST",
          message: expect.stringContaining("Idempotency-Key")
        })
        expect(Either.isRight(out.first) && Either.isRight(out.otherPrincipal)).toBe(true)
        expect(out.journal.map((r) => r.principal)).toEqual(["agent-1", "agent-2"])
        const id = out.journal[0]!.id
        expect(errorOf(out.reusedOwn)).toMatchObject({
          error: "IDEMPOTENCY_KEY_REUSED",
          message: expect.stringContaining(id)
        })
        expect(errorOf(out.foreignPayment)).toMatchObject({ error: "PAYMENT_ALREADY_SUBMITTED" })
        expect(errorOf(out.foreignPayment)?.message).not.toContain(id)
        expect(a.calls("/settle")).toBe(2)
        // An API-key principal reads only its own settlements; the open mode reads any.
        expect(out.own).toEqual(
          Either.right(expect.objectContaining({ id, idempotencyKey: "order-1", principal: "agent-1" }))
        )
        expect(errorOf(out.stranger)).toMatchObject({ error: "NOT_FOUND" })
        expect(Either.isRight(out.open)).toBe(true)
      })
  )

  it.effect("a settlement that went through is answered even when recording its evidence fails", () =>
    Effect.gen(function* () {
      const a = fixture()
      const p = yield* paymentTo(VERIFIED)
      // The evidence store breaks after the payee was judged: only recording fails.
      const unrecordable = Layer.effect(
        EvidenceRecorder,
        Effect.map(EvidenceRecorder, (recorder) => ({
          ...recorder,
          recordEconomic: () => Effect.die(new Error("the evidence store is unavailable"))
        }))
      ).pipe(Layer.provideMerge(knownEvidenceLayer))
      const out = yield* onServices(
        [{ id: "a", url: a.url }],
        Effect.gen(function* () {
          return { answer: yield* settle(body(p)), journal: yield* rows }
        }),
        { evidence: unrecordable }
      )
      expect(out.answer).toEqual(Either.right(expect.objectContaining({ success: true })))
      expect(out.journal).toEqual([expect.objectContaining({ state: "settled", backend_id: "a" })])
      expect(a.calls("/settle")).toBe(1)
    })
  )

  it.effect("payloads that would pay more, someone else or in another asset are refused before any backend call", () =>
    Effect.gen(function* () {
      const a = fixture()
      const overAmount = yield* paymentTo(VERIFIED, { transfer: { amount: "20000" } })
      const otherPayee = yield* paymentTo(VERIFIED, { transfer: { to: payee(6) } })
      const otherAsset = yield* paymentTo(VERIFIED, { transfer: { asset: OTHER_ASSET } })
      const fine = yield* paymentTo(VERIFIED)
      const out = yield* onServices(
        [{ id: "a", url: a.url }],
        Effect.gen(function* () {
          return {
            overAmount: yield* settle(body(overAmount)),
            overLimit: yield* settle(body(overAmount, { servicePolicy: { maxPricePerRequestUsd: 0.0015 } })),
            otherPayee: yield* settle(body(otherPayee)),
            otherAsset: yield* settle(body(otherAsset)),
            usdMismatch: yield* settle(body(fine, { amountUsd: 0.01 })),
            garbled: yield* settle({
              ...body(fine),
              paymentPayload: { ...fine.payment, payload: { transaction: "AAAA" } }
            } as FacilitatorRequest),
            journal: yield* rows
          }
        })
      )
      expect(errorOf(out.overAmount)).toMatchObject({ error: "TRANSFER_AMOUNT_MISMATCH" })
      expect(errorOf(out.overAmount)?.message).toContain("20000")
      // The policy is judged on what the transaction would really move, not on what the requirements claim.
      expect(errorOf(out.overLimit)).toMatchObject({ error: "POLICY_DENIED", code: "PRICE_EXCEEDS_LIMIT" })
      expect(errorOf(out.overLimit)?.message).toMatch(/worst-case spend 0\.002 USD exceeds the limit 0\.0015 USD/)
      expect(errorOf(out.otherPayee)).toMatchObject({ error: "TRANSFER_RECIPIENT_MISMATCH" })
      expect(errorOf(out.otherAsset)).toMatchObject({ error: "TRANSFER_ASSET_MISMATCH" })
      expect(errorOf(out.usdMismatch)).toMatchObject({ error: "AMOUNT_USD_MISMATCH" })
      expect(errorOf(out.garbled)).toMatchObject({ error: "MALFORMED_PAYMENT_TRANSACTION" })
      expect(a.calls("/settle")).toBe(0)
      expect(a.calls("/verify")).toBe(0)
      expect(out.journal).toHaveLength(0)
    })
  )

  it.effect("buyer policy and payee evidence refuse with 403 codes; shape and kind problems with 400 and 422", () =>
    Effect.gen(function* () {
      const a = fixture()
      const payments = {
        cheap: yield* paymentTo(VERIFIED),
        neverProbed: yield* paymentTo(NEVER_PROBED),
        unknownPayee: yield* paymentTo(NOT_IN_CATALOG),
        noChallenge: yield* paymentTo(NO_CHALLENGE),
        quarantined: yield* paymentTo(QUARANTINED),
        upto: yield* paymentTo(VERIFIED, {}, { payTo: VERIFIED, scheme: "upto" }),
        otherAssetRequired: yield* paymentTo(VERIFIED, {}, { payTo: VERIFIED, asset: OTHER_ASSET })
      }
      const out = yield* onServices(
        [{ id: "a", url: a.url }],
        Effect.gen(function* () {
          return {
            price: yield* settle(body(payments.cheap, { servicePolicy: { maxPricePerRequestUsd: 0.0005 } })),
            scheme: yield* settle(body(payments.cheap, { servicePolicy: { schemes: ["upto"] } })),
            denied: yield* settle(body(payments.cheap, { servicePolicy: { denyProviders: ["alpha"] } })),
            badPolicy: yield* settle(body(payments.cheap, { servicePolicy: { maxPricePerRequestUsd: -1 } })),
            misspelledPolicy: yield* settle(body(payments.cheap, { servicePolicy: { maxPriceperRequestUsd: 0.0005 } })),
            neverProbed: yield* settle(body(payments.neverProbed)),
            unknownPayee: yield* settle(body(payments.unknownPayee)),
            noChallenge: yield* settle(body(payments.noChallenge)),
            quarantined: yield* settle(body(payments.quarantined)),
            upto: yield* settle(body(payments.upto)),
            otherAssetRequired: yield* settle(body(payments.otherAssetRequired)),
            journal: yield* rows
          }
        })
      )
      expect(errorOf(out.price)).toMatchObject({ error: "POLICY_DENIED", code: "PRICE_EXCEEDS_LIMIT" })
      expect(errorOf(out.price)?.message).toContain("worst-case spend 0.001 USD exceeds the limit 0.0005 USD")
      expect(errorOf(out.scheme)).toMatchObject({ error: "POLICY_DENIED", code: "SCHEME_NOT_ALLOWED" })
      expect(errorOf(out.denied)).toMatchObject({ error: "POLICY_DENIED", code: "PROVIDER_DENIED" })
      expect(errorOf(out.badPolicy)).toMatchObject({ error: "INVALID_REQUEST" })
      expect(errorOf(out.badPolicy)?.message).toContain("servicePolicy")
      // A misspelled limit is refused, not dropped: dropped, the payment would settle without it.
      expect(errorOf(out.misspelledPolicy)).toMatchObject({ error: "INVALID_REQUEST" })
      expect(errorOf(out.misspelledPolicy)?.message).toContain(
        "paymentRequirements.servicePolicy.maxPriceperRequestUsd"
      )
      expect(errorOf(out.neverProbed)).toMatchObject({ error: "POLICY_DENIED", code: "NO_VERIFICATION_EVIDENCE" })
      expect(errorOf(out.unknownPayee)).toMatchObject({ error: "POLICY_DENIED", code: "NO_VERIFICATION_EVIDENCE" })
      expect(errorOf(out.noChallenge)).toMatchObject({ error: "POLICY_DENIED", code: "PAYEE_NOT_VERIFIED" })
      expect(errorOf(out.quarantined)).toMatchObject({ error: "POLICY_DENIED", code: "QUARANTINED" })
      expect(errorOf(out.upto)).toMatchObject({ error: "UNSUPPORTED_PAYMENT_KIND" })
      expect(errorOf(out.otherAssetRequired)).toMatchObject({ error: "UNSUPPORTED_ASSET" })
      expect(a.calls("/settle")).toBe(0)
      expect(out.journal).toHaveLength(0)
    })
  )

  it.effect(
    "an API-key principal's configured policy applies with servicePolicy: both must pass, the tighter limit refuses and is named",
    () =>
      Effect.gen(function* () {
        const a = fixture()
        const p = yield* paymentTo(VERIFIED)
        const key = (principal: string, policy?: AgentPolicy) => ({
          principal,
          sha256: "0".repeat(64),
          ...(policy ? { policy } : {})
        })
        const apiKeys = [
          key("agent-1", { maxPricePerRequestUsd: 0.0008 }),
          key("agent-2", { denyProviders: ["alpha"] }),
          key("agent-3")
        ]
        const out = yield* onServices(
          [{ id: "a", url: a.url }],
          Effect.gen(function* () {
            return {
              principalOnly: yield* settle(body(p), undefined, "agent-1"),
              looserService: yield* settle(
                body(p, { servicePolicy: { maxPricePerRequestUsd: 1 } }),
                undefined,
                "agent-1"
              ),
              tighterService: yield* settle(
                body(p, { servicePolicy: { maxPricePerRequestUsd: 0.0005 } }),
                undefined,
                "agent-1"
              ),
              providerDenied: yield* settle(body(p), undefined, "agent-2"),
              noPolicy: yield* settle(body(p), undefined, "agent-3")
            }
          }),
          { apiKeys }
        )
        expect(errorOf(out.principalOnly)).toMatchObject({ error: "POLICY_DENIED", code: "PRICE_EXCEEDS_LIMIT" })
        expect(errorOf(out.principalOnly)?.message).toContain('principal "agent-1"')
        expect(errorOf(out.principalOnly)?.message).toContain("worst-case spend 0.001 USD exceeds the limit 0.0008 USD")
        expect(errorOf(out.looserService)?.message).toContain("the limit 0.0008 USD")
        expect(errorOf(out.tighterService)).toMatchObject({ code: "PRICE_EXCEEDS_LIMIT" })
        expect(errorOf(out.tighterService)?.message).toContain("servicePolicy")
        expect(errorOf(out.tighterService)?.message).toContain("the limit 0.0005 USD")
        expect(errorOf(out.providerDenied)).toMatchObject({
          code: "PROVIDER_DENIED",
          message: expect.stringContaining('principal "agent-2"')
        })
        expect(Either.isRight(out.noPolicy)).toBe(true)
        expect(a.calls("/settle")).toBe(1)
        // The policy is part of the config file's apiKeys entry, decoded as strictly as the rest.
        const entry = { principal: "agent-1", sha256: "0".repeat(64) }
        expect(
          Either.isRight(decodeConfigFile({ apiKeys: [{ ...entry, policy: { maxPricePerRequestUsd: 0.01 } }] }))
        ).toBe(true)
        const misspelled = decodeConfigFile({ apiKeys: [{ ...entry, policy: { maxPriceperRequestUsd: 0.01 } }] })
        expect(Either.isLeft(misspelled) && misspelled.left.line).toContain("apiKeys[0].policy.maxPriceperRequestUsd")
      })
  )

  it.effect("the spend window refuses the settlement that would take a principal over the budget", () =>
    Effect.gen(function* () {
      const a = fixture()
      const payments = [yield* paymentTo(VERIFIED), yield* paymentTo(VERIFIED), yield* paymentTo(VERIFIED)]
      const other = yield* paymentTo(VERIFIED, { buyer: seededBuyer(9) })
      const out = yield* onServices(
        [{ id: "a", url: a.url }],
        Effect.gen(function* () {
          const results = []
          for (const p of payments) results.push(yield* settle(body(p)))
          const otherPayer = yield* settle(body(other))
          // Spend leaves the window with time.
          yield* TestClock.adjust(Duration.seconds(61))
          const later = yield* settle(body(payments[2]!))
          return { results, otherPayer, later }
        }),
        { budgets: { spendWindowUsd: 0.0025, windowSeconds: 60 } }
      )
      expect(out.results.map(Either.isRight)).toEqual([true, true, false])
      expect(errorOf(out.results[2]!)).toMatchObject({ error: "POLICY_DENIED", code: "WINDOW_LIMIT_EXCEEDED" })
      expect(errorOf(out.results[2]!)?.message).toContain("would be 0.003 USD")
      expect(errorOf(out.results[2]!)?.message).toContain("window budget of 0.0025 USD")
      expect(Either.isRight(out.otherPayer)).toBe(true)
      expect(Either.isRight(out.later)).toBe(true)
      expect(a.calls("/settle")).toBe(4)
    })
  )

  it.effect(
    "100 concurrent settles against a fee budget for 10: exactly 10 reach a backend, 90 get 429, the journal agrees",
    () =>
      Effect.gen(function* () {
        const a = fixture()
        const buyers = Array.from({ length: 100 }, (_, i) => seededBuyer(i + 10))
        const payments = yield* Effect.all(buyers.map((buyer) => paymentTo(VERIFIED, { buyer })))
        const database = join(mkdtempSync(join(tmpdir(), "sextant-settle-")), "s.db")
        const out = yield* onServices(
          [{ id: "a", url: a.url }],
          Effect.gen(function* () {
            const results = yield* Effect.all(
              payments.map((p) => settle(body(p))),
              { concurrency: "unbounded" }
            )
            return { results, journal: yield* rows }
          }),
          { budgets: { feeCeilingStroops: 1_000, globalFeeStroops: 10_000, perPrincipalFeeStroops: 5_000 }, database }
        )
        const refused = out.results.flatMap((r) => (Either.isLeft(r) ? [r.left] : []))
        expect(out.results.filter(Either.isRight)).toHaveLength(10)
        expect(refused).toHaveLength(90)
        for (const e of refused) {
          expect(e).toMatchObject({ error: "FEE_BUDGET_EXHAUSTED", retryAfterSeconds: 3600 })
        }
        expect(a.calls("/settle")).toBe(10)
        expect(out.journal).toHaveLength(10)
        expect(out.journal.every((r) => r.state === "settled")).toBe(true)
      })
  )

  it.effect(
    "two processes on one database, 50 settles each, against budgets for 10: exactly 10 reach a backend, the journal agrees",
    () =>
      Effect.gen(function* () {
        const a = fixture()
        const database = join(mkdtempSync(join(tmpdir(), "sextant-settle-processes-")), "s.db")
        // Migrated once here, so the workers do not race to create the tables.
        yield* onServices([], Effect.void, { database })
        // Ten rounds, released in both processes at once: in each, five settles per process race for a
        // principal that has room for one, while a global budget allows ten in all. A reservation that
        // is not atomic across connections shows as a principal settled twice or more than ten in all.
        const principals = Array.from({ length: 10 }, (_, i) => `agent-${i}`)
        const budgets = { feeCeilingStroops: 1_000, globalFeeStroops: 10_000, perPrincipalFeeStroops: 1_000 }
        const seeds = (first: number) => Array.from({ length: 50 }, (_, i) => first + i)
        const workers = [10, 60].map((first) =>
          startBudgetWorker({ backendUrl: a.url, database, buyerSeeds: seeds(first), principals, budgets })
        )
        for (const _ of principals) {
          yield* Effect.promise(() => Promise.all(workers.map((w) => w.ready())))
          for (const worker of workers) worker.go()
        }
        const outcomes = (yield* Effect.promise(() => Promise.all(workers.map((w) => w.outcomes())))).flat()
        const journal = yield* onServices([], rows, { database })
        expect(outcomes).toHaveLength(100)
        expect(outcomes.filter((o) => o === "settled")).toHaveLength(10)
        expect(outcomes.filter((o) => o === "FEE_BUDGET_EXHAUSTED")).toHaveLength(90)
        expect(a.calls("/settle")).toBe(10)
        expect(journal).toHaveLength(10)
        expect(journal.every((r) => r.state === "settled")).toBe(true)
        expect(journal.map((r) => r.principal).sort()).toEqual(principals)
      }),
    30_000
  )

  it.effect(
    "the per-principal fee ceiling binds an API-key principal across payers, and frees up as the window moves",
    () =>
      Effect.gen(function* () {
        const a = fixture()
        const payments = yield* Effect.all([1, 2, 3].map((n) => paymentTo(VERIFIED, { buyer: seededBuyer(200 + n) })))
        const out = yield* onServices(
          [{ id: "a", url: a.url }],
          Effect.gen(function* () {
            const first = yield* settle(body(payments[0]!), undefined, "agent-7")
            yield* TestClock.adjust(Duration.seconds(10))
            const second = yield* settle(body(payments[1]!), undefined, "agent-7")
            const third = yield* settle(body(payments[2]!), undefined, "agent-7")
            // An unauthenticated payer is its own principal, with its own ceiling.
            const asPayer = yield* settle(body(payments[2]!))
            return { first, second, third, asPayer, journal: yield* rows }
          }),
          { budgets: { feeCeilingStroops: 1_000, perPrincipalFeeStroops: 2_000, windowSeconds: 60 } }
        )
        expect(Either.isRight(out.first) && Either.isRight(out.second)).toBe(true)
        // The oldest reservation (at NOW) leaves the 60 s window 50 s after the third attempt.
        expect(errorOf(out.third)).toMatchObject({ error: "FEE_BUDGET_EXHAUSTED", retryAfterSeconds: 50 })
        expect(errorOf(out.third)?.message).toContain("per-principal")
        expect(Either.isRight(out.asPayer)).toBe(true)
        expect(out.journal.map((r) => r.principal)).toEqual(["agent-7", "agent-7", out.journal[2]!.payer!])
      })
  )

  it.effect(
    "failover: an unreachable backend is skipped and its error journaled; a backend answering 5xx is indeterminate",
    () =>
      Effect.gen(function* () {
        const a = fixture()
        const b = fixture()
        const first = yield* paymentTo(VERIFIED)
        const second = yield* paymentTo(VERIFIED)
        const out = yield* onServices(
          [
            { id: "a", url: a.url },
            { id: "b", url: b.url }
          ],
          Effect.gen(function* () {
            // Both were healthy at the last poll; a goes away afterwards.
            yield* Effect.promise(() => a.refuse())
            const failedOver = yield* settle(body(first))
            // a is now marked unhealthy; b answers 502, which may come after it submitted.
            b.setMode("fail502")
            const gateway = yield* settle(body(second))
            const retry = yield* settle(body(second))
            return { failedOver, gateway, retry, journal: yield* rows }
          })
        )
        expect(out.failedOver).toEqual(Either.right(expect.objectContaining({ success: true })))
        expect(out.journal[0]).toMatchObject({ state: "settled", backend_id: "b" })
        expect(JSON.parse(out.journal[0]!.errors_json)).toEqual([
          { backendId: "a", error: expect.stringContaining("cannot connect") }
        ])
        expect(errorOf(out.gateway)).toMatchObject({ error: "SETTLEMENT_INDETERMINATE" })
        expect(errorOf(out.retry)).toMatchObject({ error: "SETTLEMENT_UNRESOLVED" })
        expect(out.journal[1]).toMatchObject({ state: "indeterminate", backend_id: "b" })
        expect(JSON.parse(out.journal[1]!.errors_json)).toEqual([
          { backendId: "b", error: expect.stringContaining("answered 502") }
        ])
        expect(b.calls("/settle")).toBe(2)

        const c = fixture()
        const d = fixture()
        const allFailed = yield* onServices(
          [
            { id: "c", url: c.url },
            { id: "d", url: d.url }
          ],
          Effect.gen(function* () {
            yield* Effect.promise(() => Promise.all([c.refuse(), d.refuse()]))
            return { first: yield* settle(body(second)), journal: yield* rows }
          })
        )
        expect(errorOf(allFailed.first)).toMatchObject({ error: "ALL_FACILITATORS_FAILED" })
        expect(errorOf(allFailed.first)?.message).toMatch(/c: cannot connect.*d: cannot connect/)
        expect(allFailed.journal).toHaveLength(1)
        expect(allFailed.journal[0]?.state).toBe("failed")
        expect(JSON.parse(allFailed.journal[0]!.errors_json).map((e: { backendId: string }) => e.backendId)).toEqual([
          "c",
          "d"
        ])
      })
  )

  it.effect("a backend's refusal (success:false) is the answer: journaled failed, not tried elsewhere", () =>
    Effect.gen(function* () {
      const a = fixture({ mode: "invalid" })
      const b = fixture()
      const p = yield* paymentTo(VERIFIED)
      const out = yield* onServices(
        [
          { id: "a", url: a.url },
          { id: "b", url: b.url }
        ],
        Effect.gen(function* () {
          return { answer: yield* settle(body(p)), journal: yield* rows }
        })
      )
      expect(out.answer).toEqual(
        Either.right(
          expect.objectContaining({ success: false, errorReason: "invalid_exact_stellar_payload_simulation_failed" })
        )
      )
      // The refusal names no transaction: nothing was submitted, so the fee reservation is released.
      expect(out.journal[0]).toMatchObject({ state: "failed", backend_id: "a", transaction_hash: null, fee_stroops: 0 })
      expect(b.calls("/settle")).toBe(0)
    })
  )

  it.effect(
    "a settlement that never reached a backend releases its fee, and the same signed payload may be retried",
    () =>
      Effect.gen(function* () {
        const a = fixture()
        const payments = yield* Effect.all(
          [1, 2, 3, 4].map((n) => paymentTo(VERIFIED, { buyer: seededBuyer(150 + n) }))
        )
        const [p1, p2, p3, p4] = payments.map((p) => body(p))
        const out = yield* onServices(
          [{ id: "a", url: a.url }],
          Effect.gen(function* () {
            // Healthy at the last poll, unreachable when the settle comes.
            yield* Effect.promise(() => a.refuse())
            const unreachable = yield* settle(p1!)
            const afterFailure = yield* rows
            a.listen()
            yield* Effect.flatMap(FacilitatorPool, (p) => p.refresh)
            const retried = yield* settle(p1!)
            const others = [yield* settle(p2!), yield* settle(p3!)]
            const overBudget = yield* settle(p4!)
            return { unreachable, afterFailure, retried, others, overBudget, journal: yield* rows }
          }),
          // Room for three sponsored fees: the failed attempt must not take one of them.
          { budgets: { feeCeilingStroops: 1_000, globalFeeStroops: 3_000 } }
        )
        expect(errorOf(out.unreachable)).toMatchObject({ error: "ALL_FACILITATORS_FAILED" })
        expect(out.afterFailure).toEqual([expect.objectContaining({ state: "failed", fee_stroops: 0 })])
        expect(out.retried).toEqual(Either.right(expect.objectContaining({ success: true })))
        expect(out.others.every(Either.isRight)).toBe(true)
        expect(errorOf(out.overBudget)).toMatchObject({ error: "FEE_BUDGET_EXHAUSTED" })
        expect(a.calls("/settle")).toBe(3)
        // The retry re-entered the pipeline on the same journal entry.
        expect(out.journal).toHaveLength(3)
        expect(out.journal[0]).toMatchObject({
          id: out.afterFailure[0]!.id,
          state: "settled",
          backend_id: "a",
          fee_stroops: 1_000
        })
      })
  )

  it.effect("a settle that times out is indeterminate: no second backend, and a retry is refused with 409", () =>
    Effect.gen(function* () {
      const a = fixture()
      const b = fixture()
      const p = yield* paymentTo(VERIFIED)
      const out = yield* onServices(
        [
          { id: "a", url: a.url },
          { id: "b", url: b.url }
        ],
        Effect.gen(function* () {
          a.setMode("hang")
          const fiber = yield* Effect.fork(settle(body(p)))
          yield* pollUntilEffect(
            "backend a holds the settle",
            Effect.sync(() => a.calls("/settle")),
            (n) => n > 0,
            LOOPBACK
          )
          yield* TestClock.adjust(Duration.seconds(60))
          const first = yield* Fiber.join(fiber)
          const retry = yield* settle(body(p))
          const journal = yield* rows
          const record = yield* Effect.flatMap(Settlement, (s) => s.get(SettlementId.make(journal[0]!.id), null))
          return { first, retry, record }
        })
      )
      expect(errorOf(out.first)).toMatchObject({ error: "SETTLEMENT_INDETERMINATE" })
      expect(errorOf(out.first)?.message).toContain(out.record.id)
      expect(errorOf(out.retry)).toMatchObject({ error: "SETTLEMENT_UNRESOLVED" })
      expect(out.record).toMatchObject({
        state: "indeterminate",
        backendId: "a",
        errors: [{ backendId: "a", error: expect.stringContaining("no answer within") }]
      })
      expect([a.calls("/settle"), b.calls("/settle")]).toEqual([1, 0])
    })
  )

  it.effect("at start, entries left pending by a crash become indeterminate and nothing is re-sent", () =>
    Effect.gen(function* () {
      const a = fixture()
      const database = join(mkdtempSync(join(tmpdir(), "sextant-recover-")), "s.db")
      // A run that crashed after journaling: the entry is pending, as the pipeline leaves it before forwarding.
      yield* onServices(
        [{ id: "a", url: a.url }],
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql`INSERT INTO settlements (id, idempotency_key, payment_hash, request_hash, state, principal, payer, network,
            scheme, asset, pay_to, amount, worst_case_units, fee_stroops, errors_json, created_at_ms, updated_at_ms)
          VALUES ('crashed-1', 'k', 'p', 'r', 'pending', 'x', 'x', 'stellar:testnet', 'exact', 'a', 'b', '1', 1, 1, '[]', 1, 1)`
        ),
        { database }
      )
      const afterRestart = yield* onServices(
        [{ id: "a", url: a.url }],
        Effect.flatMap(Settlement, (s) => s.get(SettlementId.make("crashed-1"), null)),
        { database }
      )
      expect(afterRestart.state).toBe("indeterminate")
      expect(a.calls("/settle")).toBe(0)
    })
  )

  it.effect("an unknown settlement id is 404", () =>
    Effect.gen(function* () {
      const result = yield* onServices(
        [],
        Effect.flatMap(Settlement, (s) => Effect.either(s.get(SettlementId.make("nope"), null)))
      )
      expect(errorOf(result)).toMatchObject({ error: "NOT_FOUND" })
    })
  )
})
