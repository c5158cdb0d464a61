import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { OpenApi } from "@effect/platform"
import { type Context, Either, Schema } from "effect"
import { SextantApi } from "../src/contract/index.js"
import { ResourceIdPath } from "../src/contract/resources.js"
import { PaymentId, PaymentIdentifier, PrincipalId, ReceiptId, ResourceId, SettlementId } from "../src/domain/ids.js"
import { ResourceInfo } from "../src/domain/resources.js"
import type { NewEntry } from "../src/domain/settlements.js"
import { paymentIdentifierOf } from "../src/extensions/paymentIdentifier.js"
import type { ReceiptService } from "../src/receipts/ReceiptService.js"
import type { Settlement } from "../src/settlement/Settlement.js"
import type { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import type { SettlementJournal } from "../src/store/SettlementJournal.js"
import { request, startServer, testConfig } from "./support/server.js"

/** The first parameter of a service method, as its signature declares it. */
type ArgOf<S, K extends keyof S, N extends number = 0> = S[K] extends (...args: infer A) => unknown ? A[N] : never
type Resources = Context.Tag.Service<ResourceReadsRepo>
type Journal = Context.Tag.Service<SettlementJournal>
type Settlements = Context.Tag.Service<Settlement>
type Receipts = Context.Tag.Service<ReceiptService>

const resource = ResourceId.make("acme.inspect")
const settlement = SettlementId.make("0b6f3c4e-8a2d-4f43-9d5e-2f1c7a9b3e10")
const payment = PaymentId.make("a".repeat(64))
const receipt = ReceiptId.make("rcpt_0b6f3c4e-8a2d-4f43-9d5e-2f1c7a9b3e10")
const principal = PrincipalId.make("agent-1")

describe("branded ids at compile time (tsc checks every @ts-expect-error below)", () => {
  test("each id goes where its kind is expected, and nowhere else", () => {
    const resourceArg: ArgOf<Resources, "get"> = resource
    const settlementArg: ArgOf<Journal, "get"> = settlement
    const receiptArg: ArgOf<Receipts, "get"> = receipt
    const principalArg: ArgOf<Settlements, "get", 1> = principal
    const paymentArg: NewEntry["paymentId"] = payment

    // @ts-expect-error a settlement id is not a resource id
    const settlementAsResource: ArgOf<Resources, "get"> = settlement
    // @ts-expect-error a resource id is not a settlement id
    const resourceAsSettlement: ArgOf<Journal, "get"> = resource
    // @ts-expect-error a payment id (the signed transaction's hash) is not a settlement id
    const paymentAsSettlement: ArgOf<Settlements, "get"> = payment
    // @ts-expect-error a principal is not a receipt id
    const principalAsReceipt: ArgOf<Receipts, "get"> = principal
    // @ts-expect-error a settlement id is not a principal
    const settlementAsPrincipal: ArgOf<Settlements, "get", 1> = settlement
    // @ts-expect-error a payment-identifier extension id is not the payment's hash
    const identifierAsPayment: NewEntry["paymentId"] = PaymentIdentifier.make("client-chosen-id-0001")
    // @ts-expect-error a plain string is no id of any kind
    const plainResource: ArgOf<Resources, "get"> = "acme.inspect"

    // At run time a brand is the string itself.
    expect([resourceArg, settlementArg, receiptArg, principalArg, paymentArg]).toEqual<unknown>([
      "acme.inspect",
      "0b6f3c4e-8a2d-4f43-9d5e-2f1c7a9b3e10",
      "rcpt_0b6f3c4e-8a2d-4f43-9d5e-2f1c7a9b3e10",
      "agent-1",
      "a".repeat(64)
    ])
    expect([
      settlementAsResource,
      resourceAsSettlement,
      paymentAsSettlement,
      principalAsReceipt,
      settlementAsPrincipal,
      identifierAsPayment,
      plainResource
    ]).toHaveLength(7)
  })

  test("a path decoded by the contract hands the handler a ResourceId", () => {
    const { id } = Schema.decodeUnknownSync(ResourceIdPath)({ id: "acme.inspect" })
    const asResource: ResourceId = id
    // @ts-expect-error the decoded path id is a resource id, not a settlement id
    const asSettlement: SettlementId = id
    expect([asResource, asSettlement]).toEqual<unknown>(["acme.inspect", "acme.inspect"])
  })
})

describe("branded ids at run time", () => {
  test("a brand accepts every string the API accepted before: ids have no format of their own", () => {
    for (const raw of ["x", "discovered-0123456789abcdef", "with spaces & ünïcode", "a".repeat(500)]) {
      expect(Either.isRight(Schema.decodeUnknownEither(ResourceId)(raw))).toBe(true)
      expect(Either.isRight(Schema.decodeUnknownEither(SettlementId)(raw))).toBe(true)
      expect(Either.isRight(Schema.decodeUnknownEither(ReceiptId)(raw))).toBe(true)
    }
    expect(Either.isLeft(Schema.decodeUnknownEither(ResourceId)(42))).toBe(true)
  })

  test("a catalog record keeps its id bounds (1 to 200 characters) under the brand", () => {
    const id = ResourceInfo.fields.id
    expect(Either.isRight(Schema.decodeUnknownEither(id)("a".repeat(200)))).toBe(true)
    expect(Either.isLeft(Schema.decodeUnknownEither(id)(""))).toBe(true)
    expect(Either.isLeft(Schema.decodeUnknownEither(id)("a".repeat(201)))).toBe(true)
  })

  test("the payment identifier is the one id with an enforced format: 16 to 128 of [A-Za-z0-9_-]", () => {
    const decode = Schema.decodeUnknownEither(PaymentIdentifier)
    expect(Either.isRight(decode("a".repeat(16)))).toBe(true)
    expect(Either.isRight(decode(`${"A-z_0".repeat(25)}abc`))).toBe(true)
    for (const bad of ["a".repeat(15), "a".repeat(129), "sixteen chars ok", "sixteen.chars.ok"])
      expect(Either.isLeft(decode(bad))).toBe(true)

    const withId = (id: unknown) => ({
      paymentPayload: { extensions: { "payment-identifier": { info: { required: false, id } } } },
      paymentRequirements: {}
    })
    expect(paymentIdentifierOf(withId("order-2026-11-27-0001"))).toEqual(
      Either.right(PaymentIdentifier.make("order-2026-11-27-0001"))
    )
    const refused = paymentIdentifierOf(withId("short"))
    expect(Either.isLeft(refused) && refused.left.message).toContain("16 to 128 characters")
  })

  test("the OpenAPI document describes each id path parameter as the plain string it was", () => {
    const spec = OpenApi.fromApi(SextantApi)
    const idParameter = (path: string, method: "get" | "delete") =>
      (spec.paths[path]?.[method]?.parameters ?? []).find((p) => p.name === "id" && p.in === "path")?.schema
    for (const path of [
      "/v1/resources/{id}",
      "/v1/receipts/{id}",
      "/x402/settlements/{id}",
      "/v1/resources/{id}/history"
    ]) {
      expect(idParameter(path, "get")).toEqual({ type: "string" })
    }
    expect(idParameter("/v1/resources/{id}", "delete")).toEqual({ type: "string" })
  })
})

describe("ids in paths over HTTP", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    server = await startServer(testConfig())
  })
  afterAll(() => server.close())

  test("an id no entry has is 404 NOT_FOUND with {error, message}, never 400 or 500: no path id has a format to refuse", async () => {
    for (const path of [
      "/v1/resources/no.such.resource",
      "/v1/resources/%20odd%20id%20/metrics",
      "/v1/receipts/not-a-receipt",
      "/v1/receipts/rcpt_00000000-0000-0000-0000-000000000000/verify",
      "/x402/settlements/not-a-uuid"
    ]) {
      const { status, body } = await request(`${server.url}${path}`)
      expect({ path, status, error: (body as { error?: unknown }).error }).toEqual({
        path,
        status: 404,
        error: "NOT_FOUND"
      })
      expect(typeof (body as { message?: unknown }).message).toBe("string")
    }
  })
})
