import { expect } from "bun:test"
import { createPublicKey, sign as cryptoSign, verify as cryptoVerify, generateKeyPairSync } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { StrKey } from "@stellar/stellar-sdk"
import { Effect, type Layer } from "effect"
import { TESTNET_USDC } from "../src/config.js"
import { InvalidRequest, NoEligibleProvider, NotFound, PaymentMismatch } from "../src/domain/errors.js"
import { ReceiptId, ResourceId } from "../src/domain/ids.js"
import type { CommerceReceipt, CreateReceiptRequest } from "../src/domain/receipts.js"
import { ReceiptService } from "../src/receipts/ReceiptService.js"
import { verifyReceipt } from "../src/receipts/receipt.js"
import { Signer } from "../src/receipts/Signer.js"
import { receiptServiceLayer, recordingEvidence } from "./receiptsFixtures.js"
import { layer } from "./support/effectTest.js"

const folder = mkdtempSync(join(tmpdir(), "sextant-receipts-"))
const keyFile = join(folder, "keys", "signer.key")

/** An implementation that shares nothing with src/receipts: sorted keys, JSON.stringify, SPKI-wrapped raw keys. */
const independentCanonical = (value: unknown): string => {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : typeof v === "object" && v !== null
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sort((v as Record<string, unknown>)[k])])
          )
        : v
  return JSON.stringify(sort(value))
}
const withoutSignature = ({
  serviceSignature: _s,
  serviceSigner: _k,
  signatureAlgorithm: _a,
  ...body
}: Record<string, unknown>) => body
const spkiFromRaw = (raw: Buffer) =>
  createPublicKey({
    key: Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), raw]),
    format: "der",
    type: "spki"
  })

const purchase = (overrides: Partial<CreateReceiptRequest> = {}): CreateReceiptRequest => ({
  request: { capability: "rwa.inspect", optimizeFor: "cheapest", intent: "inspect the asset issuer for a loan desk" },
  payment: { network: "stellar:testnet", scheme: "exact", asset: "USDC", amount: "5000" },
  response: { status: 200, body: '{"issuer":"GA..."}' },
  ...overrides
})

const { events, layer: evidence } = recordingEvidence()
const create = (request: CreateReceiptRequest) => Effect.flatMap(ReceiptService, (s) => s.create(request))
const receiptCount = () =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`SELECT COUNT(*) AS n FROM receipts`)
const failure = <A, E>(effect: Effect.Effect<A, E, ReceiptService>) => Effect.flip(effect)

layer(receiptServiceLayer(join(folder, "sextant.db"), Signer.ed25519(keyFile), evidence))(
  "receipts: building, signing, storing",
  (it) => {
    it.live("a service-made receipt verifies with node:crypto and the raw public key alone", () =>
      Effect.gen(function* () {
        const receipt = yield* create(purchase())
        expect(receipt.signatureAlgorithm).toBe("ed25519")
        const raw = Buffer.from(receipt.serviceSigner, "base64")
        expect(raw.length).toBe(32)
        const message = Buffer.from(independentCanonical(withoutSignature(receipt)), "utf8")
        const signature = Buffer.from(receipt.serviceSignature, "base64")
        expect(cryptoVerify(null, message, spkiFromRaw(raw), signature)).toBe(true)
        expect(cryptoVerify(null, Buffer.concat([message, Buffer.from(" ")]), spkiFromRaw(raw), signature)).toBe(false)
      })
    )

    it.live("a receipt signed directly with node:crypto verifies with verifyReceipt, by base64 or G... key", () =>
      Effect.gen(function* () {
        const { privateKey, publicKey } = generateKeyPairSync("ed25519")
        const raw = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url")
        const body = withoutSignature((yield* create(purchase())) as unknown as Record<string, unknown>)
        const signature = cryptoSign(null, Buffer.from(independentCanonical(body), "utf8"), privateKey)
        const foreign = {
          ...body,
          serviceSignature: signature.toString("base64"),
          serviceSigner: raw.toString("base64"),
          signatureAlgorithm: "ed25519"
        }
        expect(verifyReceipt(foreign)).toMatchObject({
          valid: true,
          algorithm: "ed25519",
          signer: raw.toString("base64")
        })
        expect(verifyReceipt(foreign, { publicKey: StrKey.encodeEd25519PublicKey(raw) }).valid).toBe(true)
        expect(verifyReceipt({ ...foreign, serviceSigner: StrKey.encodeEd25519PublicKey(raw) }).valid).toBe(true)
      })
    )

    it.live("changing any top-level field, or adding one, makes the receipt invalid with a reason", () =>
      Effect.gen(function* () {
        const receipt = (yield* create(purchase())) as unknown as Record<string, unknown>
        const otherKey = Buffer.from(generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" }).x!, "base64url")
        const changed: Record<string, unknown> = {
          receiptId: "rcpt_forged",
          request: { capability: "rwa.inspect", optimizeFor: "cheapest", intent: "something else" },
          routing: { ...(receipt.routing as object), score: 0.1 },
          service: {
            ...(receipt.service as object),
            payTo: "GDN33ZI2MX4GZ6AOQYSUXIOXM4LTGQ5QIYTPLZSWTOHCR5PGFVRIHIFS"
          },
          payment: { ...(receipt.payment as object), amount: "5001" },
          response: { ...(receipt.response as object), status: 500 },
          timestamp: "2030-01-01T00:00:00.000Z",
          serviceSignature: Buffer.alloc(64, 7).toString("base64"),
          serviceSigner: otherKey.toString("base64"),
          signatureAlgorithm: "hmac-sha256"
        }
        expect(Object.keys(changed).sort()).toEqual(Object.keys(receipt).sort())
        expect(verifyReceipt(receipt).valid).toBe(true)
        for (const [field, value] of Object.entries(changed)) {
          const check = verifyReceipt({ ...receipt, [field]: value })
          expect({ field, valid: check.valid }).toEqual({ field, valid: false })
          expect(check.reason.length).toBeGreaterThan(10)
        }
        expect(verifyReceipt({ ...receipt, refund: true }).valid).toBe(false)
        expect(verifyReceipt({ ...receipt, signatureAlgorithm: "rsa" })).toMatchObject({
          valid: false,
          algorithm: "unknown"
        })
        expect(verifyReceipt([receipt]).valid).toBe(false)
      })
    )

    it.live("a re-ordered, re-spaced copy of the same data still verifies; a different key does not", () =>
      Effect.gen(function* () {
        const receipt = yield* create(purchase())
        const reordered = JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(receipt).reverse()), null, 2))
        expect(verifyReceipt(reordered).valid).toBe(true)
        const otherKey = generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" }).x!
        const check = verifyReceipt(receipt, { publicKey: Buffer.from(otherKey, "base64url").toString("base64") })
        expect(check.valid).toBe(false)
        expect(check.reason).toContain("not the expected signer")
      })
    )

    it.live("the receipt links routing, the chosen service, the payment and the response hash, and is stored", () =>
      Effect.gen(function* () {
        const receipt = yield* create(purchase())
        expect(receipt.receiptId).toMatch(/^rcpt_/)
        // The catalog router ranks cheapest first: meridian's upto option (5000) beats atlas (8000);
        // the vertical sells inspect over MCP and HTTP at one price, so both compete (ties by id).
        expect(receipt.routing).toMatchObject({
          optimizeFor: "cheapest",
          selectedResourceId: "meridian-rwa.rwa.inspect",
          fallbacks: ["atlas-ledger.rwa.inspect", "stellar-intel.mcp.inspect", "stellar-intel.rwa.inspect"]
        })
        expect(receipt.service).toMatchObject({
          resourceId: "meridian-rwa.rwa.inspect",
          providerId: "meridian-rwa",
          rank: 1
        })
        expect(receipt.payment).toEqual({
          protocol: "x402",
          network: "stellar:testnet",
          scheme: "exact",
          asset: "USDC",
          amount: "5000",
          maxAmount: "5000",
          transactionHash: null
        })
        expect(receipt.response).toEqual({
          status: 200,
          bodySha256: new Bun.CryptoHasher("sha256").update('{"issuer":"GA..."}').digest("hex")
        })
        const [row] = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql<{
              receipt: string
              resource_id: string
            }>`SELECT receipt, resource_id FROM receipts WHERE id = ${receipt.receiptId}`
        )
        expect(row?.resource_id).toBe("meridian-rwa.rwa.inspect")
        expect(JSON.parse(row!.receipt)).toEqual(receipt)
        const fetched = yield* Effect.flatMap(ReceiptService, (s) => s.get(receipt.receiptId))
        expect(fetched).toEqual(receipt)
        const checked = yield* Effect.flatMap(ReceiptService, (s) => s.verify(receipt.receiptId))
        expect(checked).toEqual({
          receiptId: receipt.receiptId,
          valid: true,
          algorithm: "ed25519",
          signer: receipt.serviceSigner,
          reason: "ed25519 signature verified"
        })
      })
    )

    it.live(
      "a chosen fallback is named as the service; a transaction hash becomes economic evidence, failed when the response was not 2xx",
      () =>
        Effect.gen(function* () {
          const before = events.length
          const receipt = yield* create(
            purchase({
              resourceId: ResourceId.make("stellar-intel.rwa.inspect"),
              payment: {
                network: "stellar:testnet",
                scheme: "exact",
                asset: TESTNET_USDC,
                amount: "10000",
                maxAmount: "10000",
                transactionHash: "a".repeat(64)
              },
              response: { status: 200, bodySha256: "b".repeat(64) }
            })
          )
          expect(receipt.service).toMatchObject({
            resourceId: "stellar-intel.rwa.inspect",
            rank: 4,
            payTo: "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
          })
          expect(receipt.routing.selectedResourceId).toBe<unknown>("meridian-rwa.rwa.inspect")
          expect(receipt.payment).toMatchObject({
            asset: TESTNET_USDC,
            maxAmount: "10000",
            transactionHash: "a".repeat(64)
          })
          expect(receipt.response.bodySha256).toBe("b".repeat(64))
          expect(events.slice(before)).toEqual<unknown>([
            {
              source: "receipt",
              resourceId: "stellar-intel.rwa.inspect",
              payTo: "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464",
              success: true,
              transactionHash: "a".repeat(64),
              at: receipt.timestamp,
              payer: null,
              expected: {
                payTo: "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464",
                amount: "10000",
                scheme: "exact"
              }
            }
          ])
          yield* create(purchase())
          expect(events.length).toBe(before + 1)
          const failed = yield* create(
            purchase({
              payment: {
                network: "stellar:testnet",
                scheme: "exact",
                asset: "USDC",
                amount: "5000",
                transactionHash: "e".repeat(64)
              },
              response: { status: 502, body: "upstream down" }
            })
          )
          expect(events.slice(before + 1)).toEqual<unknown>([
            {
              source: "receipt",
              resourceId: "meridian-rwa.rwa.inspect",
              payTo: failed.service.payTo,
              success: false,
              transactionHash: "e".repeat(64),
              at: failed.timestamp,
              payer: null,
              expected: { payTo: failed.service.payTo, amount: "12000", scheme: "exact" }
            }
          ])
        })
    )

    it.live(
      "a payment is matched to the named service's option: the ranked one, or another the constraints allow",
      () =>
        Effect.gen(function* () {
          // meridian-rwa.rwa.inspect offers option 0 upto 5000 (ceiling 30000), ranked, and option 1 exact 12000.
          const meridian = (
            payment: CreateReceiptRequest["payment"],
            constraints?: CreateReceiptRequest["request"]["constraints"]
          ) => purchase({ request: { capability: "rwa.inspect", optimizeFor: "cheapest", constraints }, payment })
          const upto = yield* create(
            meridian({
              network: "stellar:testnet",
              scheme: "upto",
              asset: TESTNET_USDC,
              amount: "7000",
              maxAmount: "30000"
            })
          )
          expect(upto.service).toMatchObject({ resourceId: "meridian-rwa.rwa.inspect", optionIndex: 0 })
          expect(upto.routing.optionIndex).toBe(0)
          const exact = yield* create(
            meridian({ network: "stellar:testnet", scheme: "exact", asset: "USDC", amount: "12000" })
          )
          expect(exact.service).toMatchObject({ resourceId: "meridian-rwa.rwa.inspect", optionIndex: 1 })
          expect(exact.payment).toMatchObject({ scheme: "exact", asset: "USDC", amount: "12000", maxAmount: "12000" })
          expect(exact.routing.optionIndex).toBe(0)

          const [before] = yield* receiptCount()
          const eventsBefore = events.length
          const mismatches = yield* Effect.forEach(
            [
              meridian({
                network: "stellar:pubnet",
                scheme: "upto",
                asset: TESTNET_USDC,
                amount: "5000",
                transactionHash: "1".repeat(64)
              }),
              meridian({ network: "stellar:testnet", scheme: "upto", asset: "EURC", amount: "5000" }),
              meridian({ network: "stellar:testnet", scheme: "exact", asset: "USDC", amount: "12001" }),
              meridian({
                network: "stellar:testnet",
                scheme: "upto",
                asset: "USDC",
                amount: "5000",
                maxAmount: "30001"
              }),
              meridian(
                { network: "stellar:testnet", scheme: "exact", asset: "USDC", amount: "12000" },
                { schemes: ["upto"] }
              )
            ],
            (request) => Effect.flip(Effect.flatMap(ReceiptService, (s) => s.create(request)))
          )

          for (const error of mismatches) {
            expect(error).toBeInstanceOf(PaymentMismatch)
            expect(error.error).toBe("PAYMENT_MISMATCH")
          }
          expect(mismatches.map((e) => e.message)).toEqual([
            "payment.network stellar:pubnet disagrees with meridian-rwa.rwa.inspect option 0, whose network is stellar:testnet",
            `payment.asset EURC disagrees with meridian-rwa.rwa.inspect option 0, whose asset is ${TESTNET_USDC} (USDC)`,
            "payment.amount 12001 disagrees with meridian-rwa.rwa.inspect option 1, which charges at most 12000",
            "payment.maxAmount 30001 disagrees with meridian-rwa.rwa.inspect option 0, which charges at most 30000",
            expect.stringMatching(
              /^the payment fits meridian-rwa\.rwa\.inspect option 1, which the request's constraints refuse: SCHEME_NOT_ALLOWED/
            )
          ])
          const [after] = yield* receiptCount()
          expect(Number(after?.n)).toBe(Number(before?.n))
          expect(events.length).toBe(eventsBefore)
        })
    )

    it.live("receipts naming one transaction count it once per resource, and are all signed and stored", () =>
      Effect.gen(function* () {
        const before = events.length
        const paid = (hash: string, status: number, resourceId?: ResourceId) =>
          purchase({
            ...(resourceId === undefined ? {} : { resourceId }),
            request: { capability: "rwa.inspect", optimizeFor: "cheapest" },
            payment: {
              network: "stellar:testnet",
              scheme: "exact",
              asset: "USDC",
              amount: "8000",
              transactionHash: hash
            },
            response: { status, body: "done" }
          })
        const hash = "2".repeat(64)
        const first = yield* create(paid(hash, 200))
        // A failed response under the same transaction must not count a second time either.
        const second = yield* create(paid(hash, 502))
        const third = yield* create(paid(hash, 200))
        expect(new Set([first.receiptId, second.receiptId, third.receiptId]).size).toBe(3)
        for (const r of [first, second, third]) expect(verifyReceipt(r).valid).toBe(true)
        const stored = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ n: number }>`SELECT COUNT(*) AS n FROM receipts WHERE transaction_hash = ${hash}`
        )
        expect(Number(stored[0]?.n)).toBe(3)
        expect(events.slice(before).map((e) => [e.resourceId, e.transactionHash, e.success])).toEqual([
          ["meridian-rwa.rwa.inspect", hash, true]
        ])

        // The same hash named for another resource is evidence about that resource.
        yield* create(paid(hash, 200, ResourceId.make("atlas-ledger.rwa.inspect")))
        expect(events.slice(before).map((e) => e.resourceId)).toEqual<unknown>([
          "meridian-rwa.rwa.inspect",
          "atlas-ledger.rwa.inspect"
        ])
      })
    )

    it.live(
      "nothing eligible, or a resource that is not eligible, is 422 NO_ELIGIBLE_PROVIDER and stores nothing",
      () =>
        Effect.gen(function* () {
          const [before] = yield* receiptCount()
          const service = Effect.flatMap(ReceiptService, (s) =>
            Effect.all([
              Effect.flip(s.create(purchase({ request: { capability: "weather.forecast" } }))),
              Effect.flip(
                s.create(
                  purchase({
                    request: { capability: "rwa.inspect", constraints: { denyProviders: ["atlas-ledger"] } },
                    resourceId: ResourceId.make("atlas-ledger.rwa.inspect")
                  })
                )
              ),
              Effect.flip(s.create(purchase({ resourceId: ResourceId.make("stellar-intel.rwa.changes") })))
            ])
          )
          const [none, denied, elsewhere] = yield* service
          for (const error of [none, denied, elsewhere]) {
            expect(error).toBeInstanceOf(NoEligibleProvider)
            expect(error.error).toBe("NO_ELIGIBLE_PROVIDER")
          }
          expect(denied.message).toContain("PROVIDER_DENIED")
          expect(elsewhere.message).toContain("does not offer")
          const [after] = yield* receiptCount()
          expect(Number(after?.n)).toBe(Number(before?.n))
        })
    )

    it.live(
      "bad purchases are 400 with a message: no response hash, a hash that disagrees, a ceiling below the amount, unsignable text",
      () =>
        Effect.gen(function* () {
          const errors = yield* Effect.all([
            failure(Effect.flatMap(ReceiptService, (s) => s.create(purchase({ response: { status: 200 } })))),
            failure(
              Effect.flatMap(ReceiptService, (s) =>
                s.create(purchase({ response: { status: 200, body: "x", bodySha256: "0".repeat(64) } }))
              )
            ),
            failure(
              Effect.flatMap(ReceiptService, (s) =>
                s.create(
                  purchase({
                    payment: { network: "stellar:testnet", scheme: "upto", asset: "USDC", amount: "10", maxAmount: "9" }
                  })
                )
              )
            ),
            failure(
              Effect.flatMap(ReceiptService, (s) =>
                s.create(purchase({ request: { capability: "rwa.inspect", intent: "x\ud800" } }))
              )
            )
          ])
          for (const error of errors) {
            expect(error).toBeInstanceOf(InvalidRequest)
            expect(error.error).toBe("INVALID_REQUEST")
          }
          expect(errors.map((e) => e.message)).toEqual([
            expect.stringContaining("bodySha256"),
            expect.stringContaining("is not the SHA-256"),
            expect.stringContaining("below payment.amount"),
            expect.stringContaining("lone surrogate")
          ])
        })
    )

    it.live("unknown receipt ids are 404 on get and verify", () =>
      Effect.gen(function* () {
        const [onGet, onVerify] = yield* Effect.flatMap(ReceiptService, (s) =>
          Effect.all([
            Effect.flip(s.get(ReceiptId.make("rcpt_nope"))),
            Effect.flip(s.verify(ReceiptId.make("rcpt_nope")))
          ])
        )

        for (const error of [onGet, onVerify]) {
          expect(error).toBeInstanceOf(NotFound)
          expect(error).toMatchObject({ error: "NOT_FOUND", message: 'no receipt with id "rcpt_nope"' })
        }
      })
    )

    it.live("after a restart on the same files, receipts are still there and verify; under a new key they do not", () =>
      Effect.gen(function* () {
        const receipt: CommerceReceipt = yield* create(purchase())
        const restarted = (signer: Layer.Layer<Signer, unknown>) =>
          Effect.flatMap(ReceiptService, (s) =>
            Effect.all([s.get(receipt.receiptId), s.verify(receipt.receiptId)])
          ).pipe(Effect.provide(receiptServiceLayer(join(folder, "sextant.db"), signer, recordingEvidence().layer)))
        const [again, check] = yield* restarted(Signer.ed25519(keyFile))
        expect(again).toEqual(receipt)
        expect(check.valid).toBe(true)
        const [, rotated] = yield* restarted(Signer.ed25519(join(folder, "rotated.key")))
        expect(rotated.valid).toBe(false)
        expect(rotated.reason).toContain("not the expected signer")
      })
    )
  }
)
