import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Either } from "effect"
import { loadConfig, TESTNET_USDC } from "../src/config.js"
import { readBazaar } from "../src/extensions/bazaar.js"
import { hasProtoMember } from "../src/http/body.js"
import { makeRedactor, REDACTED, secretsOf, urlSecrets } from "../src/redaction/redact.js"
import { transferMismatch } from "../src/settlement/rules.js"
import { pageRefusal, parseCatalogQuery } from "../src/status/StatusReader.js"
import { settleBody, signedPayment } from "./fixtures/stellarPayment.js"
import { request, startServer, testConfig } from "./support/server.js"

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"

describe("amounts", () => {
  test("a negative (or zero) upto transfer is a TRANSFER_AMOUNT_MISMATCH, like one above the ceiling", () => {
    const terms = { scheme: "upto", asset: TESTNET_USDC, payTo: PAY_TO, amount: "10000", maxAmount: "20000" } as never
    const transfer = (amount: bigint) => ({ asset: TESTNET_USDC, to: PAY_TO, amount }) as never
    expect(transferMismatch(terms, transfer(15_000n), 7)).toBeUndefined()
    for (const amount of [-1n, -(10n ** 30n), 0n, 20_001n])
      expect(transferMismatch(terms, transfer(amount), 7)?.error).toBe("TRANSFER_AMOUNT_MISMATCH")
  })

  test("a bazaar option whose maxAmount is below its amount is not catalogued", () => {
    const asset = testConfig().asset
    const reading = readBazaar(
      {
        paymentPayload: {
          resource: { url: "http://127.0.0.1:9/upto" },
          extensions: { bazaar: { info: { input: { type: "http", method: "GET" } }, schema: { type: "object" } } }
        },
        paymentRequirements: {
          scheme: "upto",
          network: "stellar:testnet",
          asset: TESTNET_USDC,
          amount: "20000",
          maxAmount: "10000",
          payTo: PAY_TO
        }
      },
      asset
    )
    expect(reading).toEqual({ _tag: "Rejected", reason: "the payment requirements' maxAmount is below their amount" })
  })
})

describe("the status page's page number", () => {
  test("only 1 to 999999 in digits", () => {
    for (const page of ["1e300", "1.5", "-1", "0", "0x10", "1000000", "Infinity", " 2"])
      expect(pageRefusal(new URLSearchParams({ page }))).not.toBeNull()
    for (const page of ["1", "42", "999999"]) expect(pageRefusal(new URLSearchParams({ page }))).toBeNull()
    expect(parseCatalogQuery(new URLSearchParams("page=1e300")).page).toBe(1)
  })

  let server: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    server = await startServer(testConfig())
  })
  afterAll(() => server.close())

  test("/status?page=1e300 is 400, and a real page still renders", async () => {
    expect((await request(`${server.url}/status?page=1e300`)).status).toBe(400)
    expect((await request(`${server.url}/status?page=2`)).status).toBe(200)
  })
})

describe("configuration", () => {
  test("probes.trustedOrigins trusts only what this process serves: the vertical and demo origins when they run", () => {
    const both = Either.getOrThrow(loadConfig(undefined, {}))
    expect([...both.probes.trustedOrigins].sort()).toEqual(
      [
        "http://127.0.0.1:4021",
        "http://127.0.0.1:4022",
        "http://127.0.0.1:4023",
        "http://127.0.0.1:4024",
        "http://127.0.0.1:4025"
      ].sort()
    )
    const dir = mkdtempSync(join(tmpdir(), "sextant-trusted-"))
    const path = join(dir, "config.json")
    writeFileSync(path, JSON.stringify({ catalog: [], vertical: { enabled: false } }))
    const none = Either.getOrThrow(loadConfig(path, {}))
    rmSync(dir, { recursive: true, force: true })
    expect(none.probes.trustedOrigins).toEqual([])
    expect(none.buyer.trustedOrigins).toEqual([])
  })

  test("tokens in the path or query of configured URLs are secrets, and redacted", () => {
    const base = testConfig()
    const config = {
      ...base,
      ledger: {
        ...base.ledger,
        sorobanRpcUrl: "https://rpc.example.com/v1/a1b2c3d4e5f6",
        horizonUrl: "https://horizon.example.com/?apiKey=horizon-key-42"
      },
      vertical: { ...base.vertical, horizonUrl: "https://h.example.com/key/ZXhhbXBsZXRva2VuMTIzNA" },
      telemetry: { ...base.telemetry, otlpEndpoint: "https://otel.example.com/v1?token=collector-token-7" },
      catalogSources: [
        { id: "s", url: "https://bazaar.example.com/discovery/resources?key=bazaar-secret-9", intervalSeconds: 60 }
      ]
    }
    const secrets = secretsOf(config)
    for (const token of [
      "a1b2c3d4e5f6",
      "horizon-key-42",
      "ZXhhbXBsZXRva2VuMTIzNA",
      "collector-token-7",
      "bazaar-secret-9"
    ])
      expect(secrets).toContain(token)
    // Path words are not secrets: they would blank ordinary text.
    expect(urlSecrets("https://bazaar.example.com/discovery/resources")).toEqual([])
    expect(urlSecrets("https://soroban-testnet.stellar.org")).toEqual([])
    const redactor = makeRedactor(secrets)
    expect(redactor.text("GET https://rpc.example.com/v1/a1b2c3d4e5f6 failed")).toBe(
      `GET https://rpc.example.com/v1/${REDACTED} failed`
    )
    expect(redactor.text("pulling ?key=bazaar-secret-9")).not.toContain("bazaar-secret-9")
  })
})

describe("a __proto__ member in a body", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    server = await startServer(testConfig())
  })
  afterAll(() => server.close())

  test("a stock x402 settle body carrying one, spelled out or escaped, is 400 naming it before anything reads it", async () => {
    const { requirements, payment } = await signedPayment(PAY_TO)
    const text = JSON.stringify(settleBody(payment, requirements))
    for (const key of ["__proto__", "\\u005f_proto__"]) {
      const smuggled = text.replace(
        '"paymentPayload":{',
        `"paymentPayload":{"${key}":{"accepted":{"payTo":"${PAY_TO}"}},`
      )
      expect(smuggled).not.toBe(text)
      const answer = await request(`${server.url}/x402/settle`, {
        method: "POST",
        body: smuggled,
        headers: { "content-type": "application/json" }
      })
      expect(answer.status).toBe(400)
      expect(answer.body.error).toBe("INVALID_REQUEST")
      expect(answer.body.message).toContain("__proto__")
    }
  })

  test("the word in a string value is only text", () => {
    expect(hasProtoMember(JSON.stringify({ query: "__proto__ \u0041" }))).toBe(false)
    expect(hasProtoMember('{"a":{"__proto__":1}}')).toBe(true)
    expect(hasProtoMember('{"a":[{"\\u005f_proto__":1}]}')).toBe(true)
  })
})
