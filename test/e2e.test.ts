import { Database } from "bun:sqlite"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http"
import { Either, Schema } from "effect"
import { loadConfig, TESTNET_USDC } from "../src/config.js"
import { SellerReceipt } from "../src/domain/receipts.js"
import { receiptInAnswer } from "../src/extensions/offerReceipt.js"
import { verifyReceipt } from "../src/receipts/receipt.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startHomeDomain, startHorizon } from "./fixtures/horizon.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { payFor } from "./fixtures/paidResource.js"
import { startSorobanRpc } from "./fixtures/sorobanRpc.js"
import { CLAW, CLAW_ISSUER, clawToml } from "./fixtures/stellarAssets.js"
import { buildExactPayment, testBuyer } from "./fixtures/stellarPayment.js"
import { pollUntil } from "./support/poll.js"
import { freePorts, type ServeProcess, spawnServe } from "./support/serveProcess.js"
import { request } from "./support/server.js"

/**
 * The whole system as an operator runs it: `sextant serve` in its own process with the reference
 * vertical beside it and the probe schedule running, reached only over HTTP. Remote parties
 * (facilitator, Horizon, Soroban RPC, an issuer's home domain) are the loopback fixtures.
 */

const defaults = Either.getOrThrow(loadConfig(undefined, {}))
const VERTICAL = defaults.vertical.name
const INTEL_IDS = ["inspect", "changes", "compliance", "eligibility"].map((e) => `${VERTICAL}.rwa.${e}`)
/** The demo providers' inspect resources; with a catalog file they are listed but not started (demo.enabled defaults to false). */
const OTHER_INSPECTORS = ["demo-fast.mcp", "demo-fast.rwa", "demo-flaky.rwa", "demo-raiser.rwa", "demo-slow.rwa"].map(
  (p) => `${p}.inspect`
)

interface Ports {
  /** 0 where the service may bind any port and report it (spawnServe reads it back). */
  readonly service: number
  /** Named in the catalog's URLs and the trusted origins, so it is chosen before anything starts. */
  readonly vertical: number
  /** Where the demo catalog's demo providers are said to live; nothing listens there. */
  readonly demo: ReadonlyArray<number>
  /** Horizon and Soroban RPC for a vertical that must never reach them; nothing listens there either. */
  readonly nowhere: number
}

/**
 * Ports for one run. The service binds port 0 unless `fixedService`: the vertical beside it sends
 * its payments to `http://<host>:<port>/x402` (`facilitatorUrlFor` in src/outbound/endpoints.ts), built from the
 * config before the service listens, so where payments must go through the service its port is
 * chosen ahead too.
 */
const allocatePorts = ({ fixedService }: { fixedService: boolean }): Ports => {
  const [vertical, nowhere, a, b, c, d, service = 0] = freePorts(fixedService ? 7 : 6) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number?
  ]
  return { service, vertical, demo: [a, b, c, d], nowhere }
}

const origin = (port: number) => `http://127.0.0.1:${port}`

/** The bundled demo catalog with each provider's origin (4021 to 4025) moved to this run's ports. */
const demoCatalogOn = (ports: Ports) =>
  ports.demo.reduce(
    (text, port, i) => text.replaceAll(origin(4022 + i), origin(port)),
    readFileSync(resolve(import.meta.dir, "../src/store/demo-catalog.json"), "utf8").replaceAll(
      origin(4021),
      origin(ports.vertical)
    )
  )

/**
 * The demo catalog given as a file, on this run's ports and folder, probes every second, the
 * providers' origins trusted as the default config trusts its own. A configured catalog leaves the
 * demo providers off, so only the vertical answers (test/demo.e2e.test.ts runs them).
 */
const serveConfig = (
  ports: Ports,
  dir: string,
  extra: {
    facilitators?: unknown
    vertical?: Record<string, unknown>
    ledger?: { rpcUrl: string; horizonUrl: string }
  } = {}
) => ({
  host: "127.0.0.1",
  port: ports.service,
  database: join(dir, "sextant.db"),
  signer: { ed25519KeyFile: join(dir, "signer.key") },
  catalog: "catalog.json",
  probes: { intervalSeconds: 1, trustedOrigins: [ports.vertical, ...ports.demo].map(origin) },
  // One buyer pays here: its payment is the level-3 evidence under test (trust.level3.test.ts covers the threshold).
  verification: { minDistinctPayers: 1 },
  facilitators: extra.facilitators ?? [],
  vertical: { port: ports.vertical, ...extra.vertical },
  // Payments are confirmed on a fixture ledger; without one the service's ledger is a port nothing listens on.
  ledger: {
    sorobanRpcUrl: extra.ledger?.rpcUrl ?? origin(ports.nowhere),
    horizonUrl: extra.ledger?.horizonUrl ?? origin(ports.nowhere),
    pollIntervalSeconds: 0.2,
    confirmTimeoutSeconds: 10
  }
})

const resources = async (service: ServeProcess) => {
  const { status, body } = await request(`${service.url}/v1/resources`)
  expect(status).toBe(200)
  return body.resources as ReadonlyArray<{ resource: { id: string; status: string; verificationLevel: number } }>
}

const statusesOf = async (service: ServeProcess, ids: ReadonlyArray<string>) => {
  const byId = new Map((await resources(service)).map((r) => [r.resource.id, r.resource]))
  return ids.map((id) => byId.get(id)?.status)
}

const waitForStatus = (service: ServeProcess, ids: ReadonlyArray<string>, status: string) =>
  pollUntil(
    `${ids.join(", ")} reach ${status}`,
    () => statusesOf(service, ids),
    (found) => found.every((s) => s === status)
  )

const catalogPrice = (id: string) => {
  const entry = defaults.catalog.find((e) => e.resource.id === id)
  if (!entry?.paymentOptions[0]) throw new Error(`the demo catalog has no priced ${id}`)
  return entry.paymentOptions[0]
}

describe("e2e: the service and the vertical, with a catalog file whose other providers are not running", () => {
  // No facilitator is configured, so the vertical's payments never become ready whatever URL they
  // go to; the service can bind port 0 (the vertical's derived facilitator URL then names port 0).
  const ports = allocatePorts({ fixedService: false })
  let service: ServeProcess

  beforeAll(async () => {
    service = await spawnServe(
      (dir) =>
        // No facilitator configured, as on a fresh machine. Horizon and Soroban RPC point at a dead
        // loopback port, so whatever happens nothing leaves this machine.
        serveConfig(ports, dir, {
          vertical: { horizonUrl: origin(ports.nowhere), sorobanRpcUrl: origin(ports.nowhere) }
        }),
      { "catalog.json": demoCatalogOn(ports) }
    )
  })
  afterAll(() => service?.stop())

  test("the vertical's four resources become PAYMENT_VERIFIED with metrics from the probe schedule alone", async () => {
    await waitForStatus(service, INTEL_IDS, "PAYMENT_VERIFIED")
    const listed = new Map((await resources(service)).map((r) => [r.resource.id, r.resource]))
    for (const id of INTEL_IDS) {
      expect(listed.get(id)?.verificationLevel).toBe(2)
      const metrics = await request(`${service.url}/v1/resources/${id}/metrics`)
      expect(metrics.status).toBe(200)
      expect(metrics.body).toMatchObject({
        resourceId: id,
        availability24h: 1,
        paymentInterfaceSuccessRate: 1,
        observedPriceUsd: catalogPrice(id).amountUsd,
        priceConsistency: 1
      })
      expect(metrics.body.observationCount).toBeGreaterThan(0)
      expect(metrics.body.reliability).toBeGreaterThan(0)
      expect(metrics.body.p50LatencyMs).toBeNumber()
      expect(metrics.body.lastVerified).toBeString()
      // What the probe read from the vertical's challenge is what the catalog advertises.
      const observations = await request(`${service.url}/v1/resources/${id}/observations`)
      expect(observations.status).toBe(200)
      const seen = observations.body.observations as ReadonlyArray<Record<string, unknown>>
      expect(seen.length).toBe(metrics.body.observationCount)
      for (const observation of seen) {
        expect(observation).toMatchObject({
          outcome: "healthy",
          httpStatus: 402,
          network: "stellar:testnet",
          asset: TESTNET_USDC,
          payTo: catalogPrice(id).payTo,
          amount: catalogPrice(id).amount
        })
      }
    }
  })

  test("routing rwa.inspect selects the vertical and rejects the unreachable providers with their codes", async () => {
    await waitForStatus(service, INTEL_IDS.slice(0, 1), "PAYMENT_VERIFIED")
    // Three failed connections in a row make a resource OFFLINE (verification.offlineAfterFailures).
    await waitForStatus(service, OTHER_INSPECTORS, "OFFLINE")
    const route = await request(`${service.url}/v1/routes`, { method: "POST", json: { capability: "rwa.inspect" } })
    expect(route.status).toBe(200)
    expect(route.body.selected).toMatchObject({
      resourceId: `${VERTICAL}.rwa.inspect`,
      providerId: VERTICAL,
      optionIndex: 0
    })
    // The vertical's MCP tool competes in the same route.
    expect(route.body.fallbacks.map((f: { resourceId: string }) => f.resourceId)).toEqual([`${VERTICAL}.mcp.inspect`])
    expect(
      route.body.rejected.map((r: { resourceId: string; codes: unknown }) => ({
        resourceId: r.resourceId,
        codes: r.codes
      }))
    ).toEqual(OTHER_INSPECTORS.map((resourceId) => ({ resourceId, codes: ["SERVICE_OFFLINE", "PAYEE_NOT_VERIFIED"] })))
  })
})

describe("e2e: a paid request to the vertical, settled through this service's /x402", () => {
  /** The service's credential toward its backend; the vertical has none, so the backend can tell who called. */
  const BACKEND_KEY = "e2e-service-to-fixture-key"
  // The vertical's payments go through the service's /x402 (asserted below), so its port is fixed.
  const ports = allocatePorts({ fixedService: true })
  const ledger = startFixtureLedger()
  const facilitator = startFacilitator({ ledger })
  const home = startHomeDomain(clawToml)
  const horizon = startHorizon({ clawHomeDomain: home.domain })
  const soroban = startSorobanRpc()
  const inspectUrl = `${origin(ports.vertical)}/${VERTICAL}/v1/rwa/inspect`
  let service: ServeProcess

  beforeAll(async () => {
    service = await spawnServe(
      (dir) =>
        serveConfig(ports, dir, {
          facilitators: [{ id: "fixture", url: facilitator.url, apiKey: BACKEND_KEY }],
          vertical: { horizonUrl: horizon.url, sorobanRpcUrl: soroban.url, allowPrivateHomeDomains: true },
          ledger
        }),
      { "catalog.json": demoCatalogOn(ports) }
    )
    await pollUntil(
      "the vertical's payments are ready through the service",
      async () => (await request(`${origin(ports.vertical)}/${VERTICAL}/v1/status`)).body.payments,
      (payments) => payments?.ready === true
    )
    // Settlement pays only a payee with probe evidence.
    await waitForStatus(service, INTEL_IDS, "PAYMENT_VERIFIED")
  })
  afterAll(async () => {
    await service?.stop()
    await Promise.all([facilitator.stop(), home.stop(), horizon.stop(), soroban.stop()])
    ledger.stop()
  })

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(inspectUrl, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body)
    })

  /** Requests the service forwarded to its backend since `from`, leaving out its /supported polls. */
  const forwardedSince = (from: number) => facilitator.requests.slice(from).filter((r) => r.path !== "/supported")

  const signedPayment = async () =>
    (await payFor((await post({ asset: CLAW })).headers.get("PAYMENT-REQUIRED") ?? "", buildExactPayment)).header

  test("the vertical's payments go through this service, whose own /x402/supported lists the fixture's kind", async () => {
    const status = await request(`${origin(ports.vertical)}/${VERTICAL}/v1/status`)
    expect(status.body.payments).toEqual({ ready: true, detail: `payments go through ${service.url}/x402` })
    const supported = await request(`${service.url}/x402/supported`)
    expect(supported.body.kinds).toContainEqual(
      expect.objectContaining({ x402Version: 2, scheme: "exact", network: "stellar:testnet" })
    )
  })

  test("an unpaid request is 402 with a PAYMENT-REQUIRED challenge for the inspect price", async () => {
    const from = facilitator.requests.length
    const unpaid = await post({ asset: CLAW })
    expect(unpaid.status).toBe(402)
    const challenge = decodePaymentRequiredHeader(unpaid.headers.get("PAYMENT-REQUIRED") ?? "")
    expect(challenge.x402Version).toBe(2)
    expect(challenge.resource.url).toBe(inspectUrl)
    expect(challenge.accepts).toEqual([
      expect.objectContaining({
        scheme: "exact",
        network: "stellar:testnet",
        asset: TESTNET_USDC,
        payTo: defaults.vertical.payTo,
        amount: defaults.vertical.prices.inspect
      })
    ])
    expect(forwardedSince(from)).toEqual([])
  })

  test("an invalid body with a payment attached is 400, and nothing is verified or settled", async () => {
    const signature = await signedPayment()
    const from = facilitator.requests.length
    const refused = await post({ asset: "USDC" }, { "PAYMENT-SIGNATURE": signature })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({
      error: "INVALID_BODY",
      message: expect.stringContaining("CODE:ISSUER")
    })
    expect(refused.headers.get("PAYMENT-RESPONSE")).toBeNull()
    expect(forwardedSince(from)).toEqual([])
  })

  test("a paid request is verified and settled by this service's backend, journaled, and then answered with data", async () => {
    const signature = await signedPayment()
    const from = facilitator.requests.length
    const paid = await post({ asset: CLAW }, { "PAYMENT-SIGNATURE": signature })
    expect(paid.status).toBe(200)
    expect(await paid.json()).toMatchObject({
      asset: { type: "classic", code: "CLAW", issuer: CLAW_ISSUER },
      issuer: { flags: { authClawbackEnabled: true }, homeDomain: home.domain },
      supply: { total: "1000000.0000000" }
    })
    const settlement = decodePaymentResponseHeader(paid.headers.get("PAYMENT-RESPONSE") ?? "")
    expect(settlement).toMatchObject({ success: true, network: "stellar:testnet", payer: testBuyer.publicKey() })
    expect(settlement.transaction).toMatch(/^[0-9a-f]{64}$/)

    // One verify and one settle reached the backend, each carrying the service's key: the service
    // forwarded them; the vertical knows only the service's /x402.
    const forwarded = forwardedSince(from)
    expect(forwarded.map((r) => [r.path, r.authorization])).toEqual([
      ["/verify", `Bearer ${BACKEND_KEY}`],
      ["/settle", `Bearer ${BACKEND_KEY}`]
    ])
    expect((forwarded[1]!.body as { paymentRequirements: unknown }).paymentRequirements).toMatchObject({
      payTo: defaults.vertical.payTo,
      amount: defaults.vertical.prices.inspect,
      asset: TESTNET_USDC
    })

    // The settle answer carries no journal id, so the journal row is read from the store itself.
    const store = new Database(join(service.dir, "sextant.db"), { readonly: true })
    const rows = store
      .query("SELECT id, state, backend_id, transaction_hash, pay_to, amount, payer FROM settlements")
      .all()
    store.close()
    expect(rows).toEqual([
      {
        id: expect.any(String),
        state: "settled",
        backend_id: "fixture",
        transaction_hash: settlement.transaction,
        pay_to: defaults.vertical.payTo,
        amount: defaults.vertical.prices.inspect,
        payer: testBuyer.publicKey()
      }
    ])
    const id = (rows[0] as { id: string }).id
    const record = await request(`${service.url}/x402/settlements/${id}`)
    expect(record.status).toBe(200)
    expect(record.body).toMatchObject({
      id,
      state: "settled",
      backendId: "fixture",
      transaction: settlement.transaction,
      payTo: defaults.vertical.payTo,
      amount: defaults.vertical.prices.inspect,
      payer: testBuyer.publicKey()
    })
    expect(record.body.history.map((h: { from: string | null; to: string }) => [h.from, h.to])).toEqual([
      [null, "pending"],
      ["pending", "settled"]
    ])

    // A settlement, once the ledger confirms it, is level-3 evidence for the one resource it paid
    // for (the payment names it), not for every resource paying the same payee.
    const [paidFor, ...samePayee] = INTEL_IDS
    await waitForStatus(service, [paidFor!], "TRANSACTION_VERIFIED")
    const listed = new Map((await resources(service)).map((r) => [r.resource.id, r.resource]))
    expect(listed.get(paidFor!)).toMatchObject({ status: "TRANSACTION_VERIFIED", verificationLevel: 3 })
    for (const id of samePayee) expect(listed.get(id)?.verificationLevel).toBeLessThan(3)
    for (const id of OTHER_INSPECTORS) expect(listed.get(id)?.verificationLevel).toBeLessThan(3)
  })

  test("a receipt for a purchase from the vertical carries the vertical's signed receipt, and still verifies offline", async () => {
    const paid = await post({ asset: CLAW }, { "PAYMENT-SIGNATURE": await signedPayment() })
    expect(paid.status).toBe(200)
    const body = await paid.text()
    const settlement = decodePaymentResponseHeader(paid.headers.get("PAYMENT-RESPONSE") ?? "")
    // Read as the buyer's payFor reads it.
    const sellerReceipt = Schema.decodeUnknownSync(SellerReceipt)(receiptInAnswer(settlement))
    const create = (carried: unknown) =>
      request(`${service.url}/v1/receipts`, {
        method: "POST",
        json: {
          request: { capability: "rwa.inspect", optimizeFor: "reliable" },
          resourceId: INTEL_IDS[0],
          payment: {
            network: "stellar:testnet",
            scheme: "exact",
            asset: TESTNET_USDC,
            amount: defaults.vertical.prices.inspect,
            transactionHash: settlement.transaction
          },
          response: { status: 200, body },
          sellerReceipt: carried
        }
      })
    const created = await create(sellerReceipt)
    expect(created.status).toBe(200)
    expect(created.body.sellerReceipt).toEqual(sellerReceipt)
    const { publicKey } = (await request(`${service.url}/v1/receipts/signer`)).body
    expect(verifyReceipt(created.body, { publicKey })).toMatchObject({ valid: true })
    // The seller's receipt is part of what the service signed: swapping it out breaks the signature.
    expect(
      verifyReceipt({ ...created.body, sellerReceipt: { format: "jws", signature: "x" } }, { publicKey }).valid
    ).toBe(false)

    // A seller receipt whose signature does not verify is refused, not carried.
    const [header, payload, signature] = sellerReceipt.signature.split(".") as [string, string, string]
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload, "base64url").toString()), payer: "GFORGED" })
    ).toString("base64url")
    const tampered = await create({ format: "jws", signature: `${header}.${forged}.${signature}` })
    expect(tampered).toMatchObject({ status: 400, body: { error: "INVALID_REQUEST" } })
    expect(tampered.body.message).toContain("does not verify")
  })
})
