import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Keypair } from "@stellar/stellar-sdk"
import { x402Client } from "@x402/core/client"
import { HTTPFacilitatorClient, x402ResourceServer } from "@x402/core/server"
import type { PaymentRequirements, SchemeNetworkClient } from "@x402/core/types"
import { decodePaymentResponseHeader, wrapFetchWithPayment } from "@x402/fetch"
import { paymentMiddleware } from "@x402/hono"
import { Hono } from "hono"
import { type GuardDecision, guardClient, type SextantGuardOptions } from "../src/client/index.js"
import { TESTNET_USDC } from "../src/config.js"
import type { OutcomeReport } from "../src/domain/outcomes.js"
import { stellarServerScheme } from "../src/x402/stellarServerScheme.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startHomeDomain, startHorizon } from "./fixtures/horizon.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { startSorobanRpc } from "./fixtures/sorobanRpc.js"
import { CLAW, clawToml } from "./fixtures/stellarAssets.js"
import { buildExactPayment } from "./fixtures/stellarPayment.js"
import { FAST_DEMO, waitForStandings } from "./support/demoServe.js"
import { pollUntil } from "./support/poll.js"
import { freePorts, type ServeProcess, spawnServe } from "./support/serveProcess.js"

/**
 * A stock @x402/fetch 2.27 client wrapped by the guard, against `sextant serve` with its demo
 * providers and a stock @x402/hono seller, all on loopback: the providers' payments go through the
 * service's /x402 to a fixture facilitator settling on a fixture ledger; the vertical's data comes
 * from fixture Horizon and Soroban RPC.
 */
const ledger = startFixtureLedger()
const facilitator = startFacilitator({ ledger })
const home = startHomeDomain(clawToml)
const horizon = startHorizon({ clawHomeDomain: home.domain })
const soroban = startSorobanRpc()
// The providers pay through the service's /x402 at its configured port, so that port is fixed.
const [port, vertical, fast, slow, flaky, raiser, nowhere] = freePorts(7) as [
  number,
  number,
  number,
  number,
  number,
  number,
  number
]
let service: ServeProcess
let stranger: ReturnType<typeof Bun.serve>

/** What a wallet registers for Stellar `exact`: the payment built and signed offline by the buyer's key. */
const stellarExact: SchemeNetworkClient = {
  scheme: "exact",
  createPaymentPayload: async (x402Version: number, requirements: PaymentRequirements) => ({
    x402Version,
    payload: (await buildExactPayment(requirements)).payload
  })
}

/** Every request the client sends, and which carried a payment. */
const sent: Array<{ readonly url: string; readonly paid: boolean }> = []
const recording = async (input: RequestInfo | URL, init?: RequestInit) => {
  const request = new Request(input, init)
  sent.push({ url: request.url, paid: request.headers.has("payment-signature") })
  return fetch(request)
}
type Pay = ReturnType<typeof wrapFetchWithPayment>

const guarded = (options: Partial<SextantGuardOptions> = {}) => {
  const decisions: Array<GuardDecision> = []
  const client = x402Client.fromConfig({
    schemes: [{ network: "stellar:testnet", client: stellarExact }],
    spendControls: { allowedAssets: [{ network: "stellar:testnet", asset: TESTNET_USDC }] }
  })
  guardClient(client, { service: service.url, onDecision: (d) => decisions.push(d), ...options })
  return { pay: wrapFetchWithPayment(recording as typeof fetch, client), decisions }
}

const inspect = (port: number, provider: string) => `http://127.0.0.1:${port}/${provider}/v1/rwa/inspect`
const post = (pay: Pay, url: string) =>
  pay(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ asset: CLAW }) })
const paidSends = (url: string) => sent.filter((s) => s.url === url && s.paid).length
const forwarded = () => facilitator.requests.filter((r) => r.path === "/verify" || r.path === "/settle").length

beforeAll(async () => {
  service = await spawnServe((dir) => ({
    host: "127.0.0.1",
    port,
    database: join(dir, "sextant.db"),
    signer: { ed25519KeyFile: join(dir, "signer.key") },
    probes: { intervalSeconds: 1 },
    facilitators: [{ id: "fixture", url: facilitator.url }],
    vertical: { port: vertical, horizonUrl: horizon.url, sorobanRpcUrl: soroban.url, allowPrivateHomeDomains: true },
    ledger: {
      sorobanRpcUrl: ledger.rpcUrl,
      horizonUrl: ledger.horizonUrl,
      pollIntervalSeconds: 0.2,
      confirmTimeoutSeconds: 10
    },
    demo: { ports: { fast, slow, flaky, raiser }, ...FAST_DEMO }
  }))
  await waitForStandings(service, 40_000)
  await pollUntil(
    "the demo provider's payments are ready through the service",
    async () =>
      (await fetch(`http://127.0.0.1:${fast}/demo-fast/v1/status`).then((r) => r.json())) as {
        payments?: { ready?: boolean }
      },
    (status) => status.payments?.ready === true,
    { timeoutMs: 20_000 }
  )
  // A stock seller no probe ever saw, naming its own payee, settling through the same service.
  const core = new x402ResourceServer(new HTTPFacilitatorClient({ url: `${service.url}/x402` })).register(
    "stellar:testnet",
    stellarServerScheme("exact")
  )
  const app = new Hono()
  app.use(
    paymentMiddleware(
      {
        "POST /inspect": {
          accepts: {
            scheme: "exact",
            network: "stellar:testnet",
            payTo: Keypair.random().publicKey(),
            price: { asset: TESTNET_USDC, amount: "10000" }
          }
        }
      },
      core
    )
  )
  app.post("/inspect", (c) => c.json({ fake: true }))
  stranger = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: app.fetch })
}, 90_000)

afterAll(async () => {
  stranger?.stop(true)
  await service?.stop()
  await Promise.all([facilitator.stop(), home.stop(), horizon.stop(), soroban.stop()])
  ledger.stop()
})

describe("the guard on a stock @x402/fetch client", () => {
  test("buys from the honest provider: preflight ALLOW, one payment, settled, the data returned, the outcome reported back", async () => {
    const reports: Array<{ readonly report: OutcomeReport; readonly result: unknown }> = []
    const { pay, decisions } = guarded({
      reportOutcomes: true,
      onOutcomeReported: (report, result) => reports.push({ report, result })
    })
    const url = inspect(fast, "demo-fast")
    const answer = await post(pay, url)
    expect(answer.status).toBe(200)
    expect(await answer.json()).toMatchObject({ asset: { code: "CLAW" } })
    const settled = decodePaymentResponseHeader(answer.headers.get("payment-response") ?? "")
    expect(settled).toMatchObject({ success: true })
    expect(decisions).toHaveLength(1)
    expect(decisions[0]).toMatchObject({ _tag: "Verdict", refused: false, answer: { verdict: "ALLOW", rating: "URL" } })
    expect(paidSends(url)).toBe(1)
    // The stock client's payment-response hook sent the settlement's transaction; the ledger backs it.
    await pollUntil(
      "the outcome report is answered",
      async () => reports,
      (r) => r.length > 0,
      { timeoutMs: 5_000 }
    )
    expect(reports).toEqual([
      {
        report: { url, outcome: "settled", transactionHash: settled.transaction.toLowerCase() },
        result: { status: 200 }
      }
    ])
  })

  test("refuses the price raiser: DENY with the reason, no payment created, nothing sent to the seller or the facilitator", async () => {
    const { pay, decisions } = guarded()
    const url = inspect(raiser, "demo-raiser")
    const before = forwarded()
    const refused = await post(pay, url).then(
      () => null,
      (e: Error) => e
    )
    expect(refused?.message).toContain("Payment creation aborted: Sextant preflight DENY")
    expect(refused?.message).toContain("PRICE_ABOVE_ADVERTISED")
    expect(refused?.message).toContain("QUARANTINED")
    expect(decisions[0]).toMatchObject({ _tag: "Verdict", refused: true, answer: { verdict: "DENY" } })
    expect(paidSends(url)).toBe(0)
    expect(forwarded()).toBe(before)
  })

  test("refuses a seller naming a payTo no probe saw: DENY PAYEE_NOT_OBSERVED, nothing paid", async () => {
    const { pay, decisions } = guarded()
    const url = `http://127.0.0.1:${stranger.port}/inspect`
    const before = forwarded()
    const refused = await post(pay, url).then(
      () => null,
      (e: Error) => e
    )
    expect(refused?.message).toContain("PAYEE_NOT_OBSERVED")
    expect(decisions[0]).toMatchObject({
      _tag: "Verdict",
      refused: true,
      answer: { verdict: "DENY", rating: "UNRATED" }
    })
    expect(paidSends(url)).toBe(0)
    expect(forwarded()).toBe(before)
  })

  test("Sextant unreachable: fail closed refuses before signing, fail open pays; a hanging Sextant is bounded by timeoutMs", async () => {
    const url = inspect(fast, "demo-fast")
    const closed = guarded({ service: `http://127.0.0.1:${nowhere}` })
    const paidBefore = paidSends(url)
    const refused = await post(closed.pay, url).then(
      () => null,
      (e: Error) => e
    )
    expect(refused?.message).toContain("Sextant guard (fail closed): Sextant could not be reached")
    expect(paidSends(url)).toBe(paidBefore)

    const open = guarded({ service: `http://127.0.0.1:${nowhere}`, failMode: "open" })
    const bought = await post(open.pay, url)
    expect(bought.status).toBe(200)
    expect(open.decisions[0]).toMatchObject({ _tag: "Unreachable", refused: false })
    expect(paidSends(url)).toBe(paidBefore + 1)

    // A Sextant that accepts the request and never answers.
    const hanging = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Promise<Response>(() => {}) })
    try {
      const slow = guarded({ service: `http://127.0.0.1:${hanging.port}`, timeoutMs: 300 })
      const started = Date.now()
      const timedOut = await post(slow.pay, url).then(
        () => null,
        (e: Error) => e
      )
      expect(timedOut?.message).toContain("Sextant gave no verdict within 300 ms")
      expect(Date.now() - started).toBeLessThan(10_000)
      expect(paidSends(url)).toBe(paidBefore + 1)
    } finally {
      hanging.stop(true)
    }
  })
})
