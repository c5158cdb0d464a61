import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { FetchHttpClient } from "@effect/platform"
import { Keypair } from "@stellar/stellar-sdk"
import { verifyReceiptSignatureJWS } from "@x402/extensions/offer-receipt"
import { Effect, Either } from "effect"
import { Buyer, BuyerClientLive, makeSextantClient } from "../src/client/index.js"
import { loadConfig } from "../src/config.js"
import { NotFound } from "../src/domain/errors.js"
import { ReceiptId, ResourceId } from "../src/domain/ids.js"
import { newProviderKey } from "../src/extensions/offerReceipt.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { startPaidResource } from "./fixtures/paidResource.js"
import { settledCredentialForms } from "./fixtures/stellarPayment.js"
import { buySummary, spawnedCli } from "./support/cliProcess.js"
import { it } from "./support/effectTest.js"
import { ledgerAt, startServer, testConfig } from "./support/server.js"

/**
 * `sextant buy` end to end on loopback: the service, four stock x402 resource servers, a fixture
 * facilitator settling on a fixture Soroban RPC/Horizon, and the CLI as a separate process (each
 * run is a fresh start of the buyer, so the spend ledger is read back from disk).
 */
const CHEAP_PAYEE = Keypair.random().publicKey()
const GOOD_PAYEE = Keypair.random().publicKey()
const SWITCHED_PAYEE = Keypair.random().publicKey()

const ledger = startFixtureLedger()
const facilitator = startFacilitator({ ledger })
// Same capability: the cheaper fails after its payment is verified (so it never settles), the other is healthy.
const cheap = startPaidResource({
  payTo: CHEAP_PAYEE,
  amount: "10000",
  method: "POST",
  capability: "demo.buy",
  failAfterVerify: true
})
// The healthy provider signs its receipts (offer-receipt): Sextant's receipt carries them.
const good = startPaidResource({
  payTo: GOOD_PAYEE,
  amount: "20000",
  method: "POST",
  capability: "demo.buy",
  receiptKey: newProviderKey()
})
// Another capability: honest while probed, then a higher price and another payee in their 402s.
const pricier = startPaidResource({ payTo: CHEAP_PAYEE, amount: "10000", capability: "demo.switch" })
const otherPayee = startPaidResource({ payTo: GOOD_PAYEE, amount: "10000", capability: "demo.switch" })
const sellers = [cheap, good, pricier, otherPayee]

const folder = mkdtempSync(join(tmpdir(), "sextant-buy-"))
const keyFile = join(folder, "buyer.key")
const receiptFile = join(folder, "receipt.json")
const configFile = join(folder, "config.json")
let service: Awaited<ReturnType<typeof startServer>>

/** Everything sent to the service, through a recording loopback proxy in front of it. */
const toService: Array<string> = []
let proxy: ReturnType<typeof Bun.serve>

/** Every stdout and stderr of the runs below, for the secret check. */
const outputs: Array<string> = []
const sextant = spawnedCli({ cwd: folder, configFile, record: outputs })

/** `sextant buy` with the buyer key; its stderr's first line is the JSON summary. */
const buy = async (...args: Array<string>) => buyWith(keyFile, ...args)
const buyWith = async (key: string, ...args: Array<string>) => {
  const run = await sextant("buy", ...args, "--key-file", key, "--service", proxy.url.origin)
  return { ...run, summary: buySummary(run) }
}

const settledTo = () =>
  facilitator.requests
    .filter((r) => r.path === "/settle")
    .map((r) => (r.body as { paymentRequirements: { payTo: string } }).paymentRequirements.payTo)

beforeAll(async () => {
  for (const seller of sellers) await seller.useFacilitator(facilitator.url)
  const base = testConfig()
  service = await startServer(
    testConfig({
      database: join(folder, "sextant.db"),
      signer: { ed25519KeyFile: join(folder, "signer.key") },
      catalog: [
        cheap.catalogEntry("cheap.data"),
        good.catalogEntry("good.data"),
        pricier.catalogEntry("pricier.data"),
        otherPayee.catalogEntry("payee.data")
      ],
      probes: { ...base.probes, allowPrivateTargets: true },
      ledger: ledgerAt(ledger)
    })
  )
  proxy = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      const body = await request.text()
      toService.push(JSON.stringify({ url: request.url, headers: request.headers.toJSON(), body }))
      const url = new URL(request.url)
      const answer = await fetch(`${service.url}${url.pathname}${url.search}`, {
        method: request.method,
        headers: { "content-type": request.headers.get("content-type") ?? "application/json" },
        ...(body === "" ? {} : { body })
      })
      return new Response(await answer.arrayBuffer(), {
        status: answer.status,
        headers: { "content-type": answer.headers.get("content-type") ?? "" }
      })
    }
  })
  // The service's own probes verify each payment interface, so the route lists them.
  for (const id of ["cheap.data", "good.data", "pricier.data", "payee.data"]) {
    const probed = await it.run(service.client.verification.validate({ payload: { resourceId: ResourceId.make(id) } }))
    expect(probed.status).toBe("PAYMENT_VERIFIED")
  }
  writeFileSync(
    configFile,
    JSON.stringify({
      database: join(folder, "unused-by-buy.db"),
      ledger: { sorobanRpcUrl: ledger.rpcUrl, horizonUrl: ledger.horizonUrl },
      // Room for exactly the first purchase: 0.001 signed at the cheaper (sent, so counted) and 0.002 paid.
      buyer: { allowPrivateTargets: true, maxUsdPerWindow: 0.003, windowSeconds: 3600 }
    })
  )
  const created = await sextant("keys", "buyer-new", "--key-file", keyFile)
  expect(created.code).toBe(0)
  expect(created.stderr).toContain("created the buyer key")
}, 30_000)

afterAll(async () => {
  proxy?.stop(true)
  await service?.close()
  for (const seller of sellers) await seller.stop()
  await facilitator.stop()
  ledger.stop()
})

describe("sextant buy", () => {
  test("the cheaper provider fails after verify without being paid; the healthy one is paid exactly once; the receipt verifies offline", async () => {
    const { code, stdout, summary } = await buy(
      "demo.buy",
      "--input",
      '{"symbol":"USDC","depth":2}',
      "--max-usd",
      "0.01",
      "--optimize-for",
      "cheapest",
      "--receipt-file",
      receiptFile
    )
    expect(code).toBe(0)
    // The data on stdout: the healthy resource's answer, which echoes the input it got as a JSON body (its method is POST).
    expect(JSON.parse(stdout)).toEqual({ data: "paid content", input: { body: { symbol: "USDC", depth: 2 } } })
    expect(summary.attempts).toEqual([
      expect.objectContaining({
        rank: 1,
        resourceId: "cheap.data",
        outcome: "failed",
        amount: "10000",
        httpStatus: 500,
        transactionHash: null
      }),
      expect.objectContaining({ rank: 2, resourceId: "good.data", outcome: "paid", amount: "20000", httpStatus: 200 })
    ])
    expect(summary.attempts[0].reason).toContain("answered 500 without settling")
    // Read before any toMatchObject: bun's matcher writes its asymmetric matchers into the received object.
    const { receiptId } = summary
    const transactionHash = summary.paid.transactionHash
    expect(transactionHash).toMatch(/^[0-9a-f]{64}$/)
    expect(receiptId).toMatch(/^rcpt_/)
    expect(summary.paid).toMatchObject({ amount: "20000", amountUsd: 0.002, payTo: GOOD_PAYEE, transactionHash })
    expect(summary.provider).toMatchObject({ resourceId: "good.data", rank: 2 })

    // The cheaper one's payment was verified and never settled; the healthy one was settled once,
    // signed as simulation on a Protocol 28 network recorded it: ADDRESS_V2.
    expect(settledTo()).toEqual([GOOD_PAYEE])
    expect(settledCredentialForms(facilitator.requests)).toEqual(["addressV2"])
    expect(cheap.requests.filter((r) => r.headers["payment-signature"] !== undefined)).toHaveLength(1)
    expect(good.requests.filter((r) => r.headers["payment-signature"] !== undefined)).toHaveLength(1)

    // The receipt names the payment and the answer's digest; it verifies offline.
    const receipt = JSON.parse(readFileSync(receiptFile, "utf8"))
    // It carries the seller's signed receipt, covered by the offline check below.
    expect(receipt.sellerReceipt?.format).toBe("jws")
    expect(receipt).toMatchObject({
      receiptId,
      service: { resourceId: "good.data", payTo: GOOD_PAYEE },
      payment: { amount: "20000", transactionHash },
      response: { status: 200, bodySha256: createHash("sha256").update(stdout.trimEnd()).digest("hex") }
    })
    const verified = await sextant("receipt", "verify", receiptFile)
    expect(verified.code).toBe(0)
  }, 30_000)

  test("after a restart the local spend ledger has no room: nothing is signed and the exit code says so", async () => {
    const settles = facilitator.calls("/settle")
    const verifies = facilitator.calls("/verify")
    const { code, stdout, summary } = await buy("demo.buy", "--max-usd", "0.01", "--optimize-for", "cheapest")
    expect(code).toBe(6)
    expect(stdout).toBe("")
    expect(summary.error).toBe("SPEND_LIMIT_REACHED")
    expect(summary.attempts.map((a: { outcome: string }) => a.outcome)).toEqual(["over_budget", "over_budget"])
    expect(summary.attempts[0].reason).toContain("(30000 already counted)")
    expect([facilitator.calls("/settle"), facilitator.calls("/verify")]).toEqual([settles, verifies])
  }, 30_000)

  test("a 402 asking more than the routed price, or naming another payee, is never paid", async () => {
    await pricier.switchTerms({ amount: "15000" })
    await otherPayee.switchTerms({ payTo: SWITCHED_PAYEE })
    const requestsBefore = facilitator.requests.length
    // A separate key with a fresh spend ledger, so only the challenges can refuse.
    const fresh = join(folder, "fresh.key")
    expect((await sextant("keys", "buyer-new", "--key-file", fresh)).code).toBe(0)
    const { code, summary } = await buyWith(fresh, "demo.switch", "--max-usd", "0.01")
    expect(code).toBe(4)
    expect(summary.error).toBe("ALL_PROVIDERS_FAILED")
    const byId = Object.fromEntries(summary.attempts.map((a: { resourceId: string }) => [a.resourceId, a]))
    expect(byId["pricier.data"]).toMatchObject({ outcome: "refused", amount: null })
    expect(byId["pricier.data"].reason).toContain("asks 15000 base units, more than the routed ceiling 10000")
    expect(byId["payee.data"]).toMatchObject({ outcome: "refused", amount: null })
    expect(byId["payee.data"].reason).toContain(`payee ${SWITCHED_PAYEE} is not the routed payee ${GOOD_PAYEE}`)
    // Nothing was signed: no paid request reached either, and the facilitator heard nothing.
    for (const seller of [pricier, otherPayee])
      expect(seller.requests.some((r) => r.headers["payment-signature"] !== undefined)).toBe(false)
    expect(facilitator.requests.length).toBe(requestsBefore)
  }, 30_000)

  test("from TypeScript: the typed client answers every endpoint with its own errors, and Buyer.buy returns data, receipt, provider, paid and attempts", async () => {
    const client = await it.run(
      makeSextantClient({ baseUrl: proxy.url.origin }).pipe(Effect.provide(FetchHttpClient.layer))
    )
    const missing = await it.run(Effect.flip(client.resources.get({ path: { id: ResourceId.make("no.such") } })))
    expect(missing).toBeInstanceOf(NotFound)
    expect((await it.run(client.receipts.signer())).offlineVerifiable).toBe(true)

    const tsKey = join(folder, "ts.key")
    expect((await sextant("keys", "buyer-new", "--key-file", tsKey)).code).toBe(0)
    const config = Either.getOrThrow(loadConfig(configFile, {}))
    const result = await it.run(
      Effect.flatMap(Buyer, (buyer) =>
        buyer.buy({
          capability: "demo.buy",
          input: { symbol: "EURC" },
          policy: { maxPricePerRequestUsd: 0.01 },
          optimizeFor: "cheapest"
        })
      ).pipe(Effect.provide(BuyerClientLive(config, { keyFile: tsKey, service: proxy.url.origin })))
    )
    expect(result.data).toEqual({ data: "paid content", input: { body: { symbol: "EURC" } } })
    expect(result.provider.resourceId).toBe<unknown>("good.data")
    expect(result.attempts.map((a) => a.outcome)).toEqual(["failed", "paid"])
    const receiptId = result.receipt?.receiptId ?? ""
    expect(receiptId).toMatch(/^rcpt_/)
    expect((await it.run(client.receipts.verify({ path: { id: ReceiptId.make(receiptId) } }))).valid).toBe(true)
    // The seller's signed receipt, read from its paid answer, is carried and names this payment.
    const sellerReceipt = result.receipt?.sellerReceipt
    expect(sellerReceipt?.format).toBe("jws")
    expect(await verifyReceiptSignatureJWS({ format: "jws", signature: sellerReceipt?.signature ?? "" })).toMatchObject(
      {
        transaction: result.paid.transactionHash,
        network: "stellar:testnet"
      }
    )
  }, 30_000)

  test("nothing eligible, a missing key and a bad command line have their own exit codes", async () => {
    const none = await buy("demo.nobody", "--max-usd", "0.01")
    expect(none.code).toBe(3)
    expect(none.summary.error).toBe("NOTHING_ELIGIBLE")
    const missing = await buyWith(join(folder, "absent.key"), "demo.buy", "--max-usd", "1")
    expect(missing.code).toBe(2)
    expect(missing.summary).toMatchObject({
      error: "KEY_FILE",
      message: expect.stringContaining("create it with sextant keys buyer-new")
    })
    expect(existsSync(join(folder, "absent.key"))).toBe(false)
    const usage = await sextant("buy", "demo.buy")
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain("--max-usd")
    expect(JSON.parse(usage.stderr.trim().split("\n").at(-1)!)).toMatchObject({ error: "USAGE" })
  }, 30_000)

  test("the buyer's secret key appears in no request, log line or file other than its key file", () => {
    const secret = readFileSync(keyFile, "utf8").trim()
    const raw = Buffer.from(Keypair.fromSecret(secret).rawSecretKey())
    const forms = [secret, raw.toString("hex"), raw.toString("base64"), JSON.stringify([...raw]).slice(1, -1)]
    const sent = [
      ...toService,
      ...sellers.flatMap((s) => s.requests.map((r) => JSON.stringify(r))),
      JSON.stringify(facilitator.requests),
      ...ledger.rpcBodies,
      ...ledger.horizonRequests
    ].join("\n")
    expect(sent.length).toBeGreaterThan(0)
    // Every file the buyer and the service wrote, but the key file.
    const files = [
      "sextant.db",
      "sextant.db-wal",
      "buyer.key.spend.db",
      "buyer.key.spend.db-wal",
      "receipt.json",
      "config.json"
    ]
      .map((name) => join(folder, name))
      .filter(existsSync)
      .map((path) => readFileSync(path).toString("latin1"))
    const printed = outputs.join("\n")
    for (const form of forms) {
      expect(sent).not.toContain(form)
      for (const file of files) expect(file).not.toContain(form)
      expect(printed).not.toContain(form)
    }
  })
})
