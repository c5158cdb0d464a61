import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test"
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from "@x402/core/http"
import type { PaymentRequired } from "@x402/core/types"
import {
  extractPublicKeyFromKid,
  type JWSSignedReceipt,
  verifyReceiptSignatureJWS
} from "@x402/extensions/offer-receipt"
import { Effect, Either, ManagedRuntime, TestClock } from "effect"
import { type Config, loadConfig, TESTNET_USDC, type VerticalConfig } from "../src/config.js"
import type { KeyFileError } from "../src/keys/keyFileError.js"
import { exactOffers, Paywall } from "../src/vertical/Paywall.js"
import { VerticalServer, type VerticalServerShape } from "../src/vertical/VerticalServer.js"
import { type FixtureFacilitator, startFacilitator } from "./fixtures/facilitator.js"
import { type FixtureHorizon, startHomeDomain, startHorizon } from "./fixtures/horizon.js"
import { type FixtureSorobanRpc, NATIVE_SAC, RWAB_SAC, startSorobanRpc } from "./fixtures/sorobanRpc.js"
import {
  CLAW,
  CLAW_ISSUER,
  clawToml,
  FROZEN_HOLDER,
  GHOST,
  HOLDER,
  MISSING_WALLET,
  RWAB,
  TTF_CONTRACT,
  TTF_NEW_ADMIN
} from "./fixtures/stellarAssets.js"
import { buildExactPayment } from "./fixtures/stellarPayment.js"
import { it } from "./support/effectTest.js"
import { LOOPBACK, pollUntil, pollUntilEffect } from "./support/poll.js"

const ENDPOINTS = ["inspect", "changes", "compliance", "eligibility"] as const
type Endpoint = (typeof ENDPOINTS)[number]
const defaults = Either.getOrThrow(loadConfig(undefined, {}))
const validBody: Record<Endpoint, unknown> = {
  inspect: { asset: CLAW },
  changes: { asset: CLAW },
  compliance: { asset: CLAW },
  eligibility: { asset: CLAW, wallet: HOLDER }
}

let home: { domain: string; stop: () => unknown }
let horizon: FixtureHorizon
let soroban: FixtureSorobanRpc
beforeAll(() => {
  home = startHomeDomain(clawToml)
  horizon = startHorizon({ clawHomeDomain: home.domain })
  soroban = startSorobanRpc()
})
afterAll(async () => {
  await Promise.all([home.stop(), horizon.stop(), soroban.stop()])
})

const runtimes: Array<ManagedRuntime.ManagedRuntime<VerticalServer, KeyFileError>> = []
const facilitators: Array<FixtureFacilitator> = []
afterEach(async () => {
  horizon.release()
  horizon.setFailing(false)
  soroban.setFailing(false)
  await Promise.all(runtimes.splice(0).map((r) => r.dispose()))
  await Promise.all(facilitators.splice(0).map((f) => f.stop()))
})

const facilitator = (...args: Parameters<typeof startFacilitator>) => {
  const f = startFacilitator(...args)
  facilitators.push(f)
  return f
}

const configFor = (facilitatorUrl: string, vertical: Partial<VerticalConfig> = {}): Config => ({
  ...defaults,
  vertical: {
    ...defaults.vertical,
    port: 0,
    horizonUrl: horizon.url,
    sorobanRpcUrl: soroban.url,
    facilitatorUrl,
    allowPrivateHomeDomains: true,
    ...vertical
  }
})

const startVertical = async (facilitatorUrl: string, vertical: Partial<VerticalConfig> = {}) => {
  const runtime = ManagedRuntime.make(VerticalServer.layer(configFor(facilitatorUrl, vertical)))
  runtimes.push(runtime)
  const server = await runtime.runPromise(VerticalServer)
  const payments = () => runtime.runPromise(server.payments)
  return { ...server, payments }
}

const startReady = async (vertical: Partial<VerticalConfig> = {}) => {
  const fac = facilitator()
  const server = await startVertical(fac.url, vertical)
  await pollUntil("the vertical's payments are ready", server.payments, (s) => s.ready, LOOPBACK)
  return { fac, server }
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

const challengeOf = (response: Response): PaymentRequired => {
  const header = response.headers.get("PAYMENT-REQUIRED")
  if (header === null) throw new Error(`no PAYMENT-REQUIRED on a ${response.status}`)
  return decodePaymentRequiredHeader(header)
}

const signatureFor = async (challenge: PaymentRequired) => {
  const [requirements] = challenge.accepts
  if (!requirements) throw new Error("the challenge offers nothing")
  return encodePaymentSignatureHeader(await buildExactPayment(requirements))
}

/** The buyer's round trip: read the challenge, sign what it asks, retry with PAYMENT-SIGNATURE. */
const pay = async (server: Pick<VerticalServerShape, "baseUrl">, endpoint: Endpoint, body: unknown) => {
  const url = `${server.baseUrl}/${endpoint}`
  const signature = await signatureFor(challengeOf(await post(url, body)))
  return post(url, body, { "PAYMENT-SIGNATURE": signature })
}

const catalogOption = (endpoint: Endpoint) => {
  const entry = defaults.catalog.find((e) => e.resource.id === `stellar-intel.rwa.${endpoint}`)
  if (!entry) throw new Error(`the demo catalog has no stellar-intel.rwa.${endpoint}`)
  return entry
}

describe("vertical: challenges", () => {
  test("every endpoint answers 402 with a challenge for stellar:testnet USDC, the payee and its price, body or not", async () => {
    const { server } = await startReady()
    for (const endpoint of ENDPOINTS) {
      for (const body of [validBody[endpoint], "", "{not json"]) {
        const response = await post(`${server.baseUrl}/${endpoint}`, body)
        expect(response.status).toBe(402)
        expect(await response.json()).toMatchObject({ error: "PAYMENT_REQUIRED" })
        const challenge = challengeOf(response)
        expect(challenge.x402Version).toBe(2)
        expect(challenge.resource.url).toBe(`${server.baseUrl}/${endpoint}`)
        expect(challenge.accepts).toEqual([
          {
            scheme: "exact",
            network: "stellar:testnet",
            asset: TESTNET_USDC,
            amount: defaults.vertical.prices[endpoint],
            payTo: defaults.vertical.payTo,
            maxTimeoutSeconds: 300,
            extra: { areFeesSponsored: true }
          }
        ])
      }
    }
  })

  test("the bundled demo catalog describes exactly what the vertical charges", async () => {
    const { server } = await startReady()
    for (const endpoint of ENDPOINTS) {
      const entry = catalogOption(endpoint)
      expect(new URL(entry.resource.url).pathname).toBe(`/${defaults.vertical.name}/v1/rwa/${endpoint}`)
      expect(new URL(entry.resource.url).origin).toBe(`http://${defaults.vertical.host}:${defaults.vertical.port}`)
      expect(entry.resource.method).toBe("POST")
      expect(entry.resource.capabilities).toEqual([`rwa.${endpoint}`])
      const [accepted] = challengeOf(await post(`${server.baseUrl}/${endpoint}`, validBody[endpoint])).accepts
      expect(entry.paymentOptions).toHaveLength(1)
      expect(entry.paymentOptions[0]).toMatchObject({
        scheme: accepted?.scheme,
        network: accepted?.network,
        asset: accepted?.asset,
        amount: accepted?.amount,
        payTo: accepted?.payTo
      })
    }
  })

  test("while the facilitator is unreachable the vertical still challenges, and a paid request is 503 and never settled", async () => {
    const fac = facilitator()
    await fac.refuse()
    const server = await startVertical(fac.url)
    await pollUntil(
      "the vertical reports its facilitator not ready",
      server.payments,
      (s) => s.detail.includes("not ready"),
      LOOPBACK
    )
    for (const endpoint of ENDPOINTS) {
      const unpaid = await post(`${server.baseUrl}/${endpoint}`, validBody[endpoint])
      expect(unpaid.status).toBe(402)
      const challenge = challengeOf(unpaid)
      expect(challenge.accepts[0]).toMatchObject({
        network: "stellar:testnet",
        asset: TESTNET_USDC,
        payTo: defaults.vertical.payTo,
        amount: defaults.vertical.prices[endpoint]
      })
      const paid = await post(`${server.baseUrl}/${endpoint}`, validBody[endpoint], {
        "PAYMENT-SIGNATURE": await signatureFor(challenge)
      })
      expect(paid.status).toBe(503)
      expect(paid.headers.get("retry-after")).toBe("5")
      const body = (await paid.json()) as { error: string; message: string }
      expect(body.error).toBe("PAYMENTS_UNAVAILABLE")
      expect(body.message).toContain("nothing was charged")
    }
    fac.listen()
    expect(fac.calls("/settle")).toBe(0)
  })

  test("a facilitator that lists no Stellar kind leaves payments unavailable but challenges served", async () => {
    const fac = facilitator({ kinds: [{ x402Version: 2, scheme: "exact", network: "eip155:84532" }] })
    const server = await startVertical(fac.url)
    const status = await pollUntil(
      "the vertical reports no exact kind",
      server.payments,
      (s) => s.detail.includes("no exact kind"),
      LOOPBACK
    )
    expect(status.ready).toBe(false)
    const statusPage = await fetch(`${server.origin}/stellar-intel/v1/status`)
    expect(statusPage.status).toBe(200)
    expect(await statusPage.json()).toMatchObject({
      status: "ok",
      network: "stellar:testnet",
      payments: { ready: false },
      endpoints: ENDPOINTS.map((endpoint) => ({
        method: "POST",
        url: `${server.baseUrl}/${endpoint}`,
        capability: `rwa.${endpoint}`,
        amount: defaults.vertical.prices[endpoint]
      }))
    })
    const unpaid = await post(`${server.baseUrl}/inspect`, validBody.inspect)
    expect(unpaid.status).toBe(402)
    const paid = await post(`${server.baseUrl}/inspect`, validBody.inspect, {
      "PAYMENT-SIGNATURE": await signatureFor(challengeOf(unpaid))
    })
    expect(paid.status).toBe(503)
    expect(fac.calls("/verify") + fac.calls("/settle")).toBe(0)
  })
})

describe("vertical: refusals before any charge", () => {
  test("malformed bodies are 400 naming the problem, and the facilitator is never called", async () => {
    const { fac, server } = await startReady()
    const signature = await signatureFor(challengeOf(await post(`${server.baseUrl}/inspect`, validBody.inspect)))
    const cases: ReadonlyArray<readonly [Endpoint, unknown, string, string]> = [
      ["inspect", "{not json", "INVALID_JSON", "JSON"],
      ["inspect", "", "INVALID_JSON", "JSON"],
      ["inspect", {}, "INVALID_BODY", "asset"],
      ["inspect", { asset: "USDC" }, "INVALID_BODY", "CODE:ISSUER"],
      ["inspect", { asset: `TOOLONGCODE123:${CLAW_ISSUER}` }, "INVALID_BODY", "1 to 12"],
      ["inspect", { asset: `CLAW:${CLAW_ISSUER.slice(0, -1)}A` }, "INVALID_BODY", "issuer"],
      ["changes", { asset: CLAW, extra: true }, "INVALID_BODY", "extra"],
      ["compliance", { asset: 42 }, "INVALID_BODY", "asset"],
      ["eligibility", { asset: CLAW }, "INVALID_BODY", "wallet"],
      ["eligibility", { asset: CLAW, wallet: TTF_CONTRACT }, "INVALID_BODY", "wallet"]
    ]
    for (const [endpoint, body, error, mentions] of cases) {
      const response = await post(`${server.baseUrl}/${endpoint}`, body, { "PAYMENT-SIGNATURE": signature })
      expect(response.status).toBe(400)
      const answer = (await response.json()) as { error: string; message: string }
      expect(answer.error).toBe(error)
      expect(answer.message).toContain(mentions)
    }
    const huge = await post(
      `${server.baseUrl}/inspect`,
      { asset: CLAW, pad: "x".repeat(20_000) },
      { "PAYMENT-SIGNATURE": signature }
    )
    expect(huge.status).toBe(413)
    const badSignature = await post(`${server.baseUrl}/inspect`, validBody.inspect, {
      "PAYMENT-SIGNATURE": "%%%not-base64"
    })
    expect(badSignature.status).toBe(400)
    expect(await badSignature.json()).toMatchObject({ error: "INVALID_PAYMENT" })
    expect(fac.calls("/verify") + fac.calls("/settle")).toBe(0)
  })

  test("a payment made for another endpoint's price is refused with a fresh challenge, unverified", async () => {
    const { fac, server } = await startReady()
    const forInspect = await signatureFor(challengeOf(await post(`${server.baseUrl}/inspect`, validBody.inspect)))
    const response = await post(`${server.baseUrl}/changes`, validBody.changes, { "PAYMENT-SIGNATURE": forInspect })
    expect(response.status).toBe(402)
    expect(challengeOf(response).accepts[0]?.amount).toBe(defaults.vertical.prices.changes)
    expect(fac.calls("/verify")).toBe(0)
  })

  test("a payment the facilitator rejects gets 402 with its reason and is not settled", async () => {
    const { fac, server } = await startReady()
    fac.setMode("invalid")
    const response = await pay(server, "inspect", validBody.inspect)
    expect(response.status).toBe(402)
    expect(challengeOf(response).error).toBe("invalid_exact_stellar_payload_wrong_amount")
    expect(fac.calls("/verify")).toBe(1)
    expect(fac.calls("/settle")).toBe(0)
  })

  test("Horizon failing is 502 after verify, and the payment is never settled", async () => {
    const { fac, server } = await startReady()
    horizon.setFailing(true)
    for (const endpoint of ENDPOINTS) {
      const response = await pay(server, endpoint, validBody[endpoint])
      expect(response.status).toBe(502)
      const body = (await response.json()) as { error: string; message: string }
      expect(body.error).toBe("UPSTREAM_UNAVAILABLE")
      expect(body.message).toContain("horizon")
      expect(body.message).toContain("nothing was charged")
    }
    expect(fac.calls("/verify")).toBe(ENDPOINTS.length)
    expect(fac.calls("/settle")).toBe(0)
  })

  test("Soroban RPC failing is 502 for a contract token, and a Horizon that hangs past the bound is 502 too", async () => {
    const { fac, server } = await startReady({ upstreamTimeoutMs: 200 })
    soroban.setFailing(true)
    const rpcDown = await pay(server, "inspect", { asset: TTF_CONTRACT })
    expect(rpcDown.status).toBe(502)
    expect(((await rpcDown.json()) as { message: string }).message).toContain("soroban-rpc")
    soroban.setFailing(false)
    horizon.hold()
    const slow = await pay(server, "compliance", { asset: CLAW })
    expect(slow.status).toBe(502)
    expect(((await slow.json()) as { message: string }).message).toContain("did not answer within 200 ms")
    expect(fac.calls("/settle")).toBe(0)
  })

  test("assets that do not exist are 404 and a native-XLM contract is 422, neither charged", async () => {
    const { fac, server } = await startReady()
    const cases: ReadonlyArray<readonly [Endpoint, unknown, number, string]> = [
      ["inspect", { asset: GHOST }, 404, "ASSET_NOT_FOUND"],
      ["eligibility", { asset: GHOST, wallet: HOLDER }, 404, "ASSET_NOT_FOUND"],
      ["changes", { asset: "CAAQCAIBAEAQCAIBAEAQCAIBAEAQCAIBAEAQCAIBAEAQCAIBAEAQC526" }, 404, "ASSET_NOT_FOUND"],
      ["inspect", { asset: NATIVE_SAC }, 422, "UNSUPPORTED_ASSET"]
    ]
    for (const [endpoint, body, status, error] of cases) {
      const response = await pay(server, endpoint, body)
      expect(response.status).toBe(status)
      expect(await response.json()).toMatchObject({ error })
    }
    expect(fac.calls("/settle")).toBe(0)
  })

  test("unknown routes are 404 with {error, message}", async () => {
    const { server } = await startReady()
    for (const [method, path] of [
      ["GET", "/stellar-intel/v1/rwa/inspect"],
      ["POST", "/stellar-intel/v1/rwa/holders"],
      ["POST", "/other/v1/rwa/inspect"]
    ] as const) {
      const response = await fetch(`${server.origin}${path}`, { method, body: method === "POST" ? "{}" : null })
      expect(response.status).toBe(404)
      expect(await response.json()).toMatchObject({ error: "NOT_FOUND" })
    }
  })
})

describe("vertical: paid requests", () => {
  test("each endpoint returns its data only after settling, with PAYMENT-RESPONSE", async () => {
    const { fac, server } = await startReady()
    const answers: Partial<Record<Endpoint, Record<string, unknown>>> = {}
    for (const endpoint of ENDPOINTS) {
      const before = fac.requests.length
      const response = await pay(server, endpoint, validBody[endpoint])
      expect(response.status).toBe(200)
      const header = response.headers.get("PAYMENT-RESPONSE")
      expect(header).not.toBeNull()
      const settlement = decodePaymentResponseHeader(header ?? "")
      expect(settlement.success).toBe(true)
      expect(settlement.network).toBe("stellar:testnet")
      expect(settlement.transaction).toMatch(/^[0-9a-f]{64}$/)
      // The provider signs a receipt (offer-receipt, JWS EdDSA) naming the payer and the transaction.
      const receipt = (settlement.extensions!["offer-receipt"] as { info: { receipt: JWSSignedReceipt } }).info.receipt
      const kid = JSON.parse(Buffer.from(receipt.signature.split(".")[0]!, "base64url").toString()).kid as string
      expect(await verifyReceiptSignatureJWS(receipt, await extractPublicKeyFromKid(kid))).toMatchObject({
        network: "stellar:testnet",
        transaction: settlement.transaction,
        payer: settlement.payer
      })
      expect(fac.requests.slice(before).map((r) => r.path)).toEqual(["/verify", "/settle"])
      const settled = fac.requests.at(-1)?.body as { paymentRequirements: { amount: string; payTo: string } }
      expect(settled.paymentRequirements.amount).toBe(defaults.vertical.prices[endpoint])
      expect(settled.paymentRequirements.payTo).toBe(defaults.vertical.payTo)
      answers[endpoint] = (await response.json()) as Record<string, unknown>
    }
    expect(answers.inspect).toMatchObject({
      asset: { type: "classic", code: "CLAW", issuer: CLAW_ISSUER },
      issuer: {
        flags: { authClawbackEnabled: true, authRevocable: true, authRequired: false },
        homeDomain: home.domain
      },
      metadata: {
        stellarToml: {
          status: "published",
          organization: "Claw Capital Testnet",
          currency: { name: "Claw Capital Note" }
        }
      },
      supply: { total: "1000000.0000000" },
      holders: { trustlines: 4 }
    })
    expect((answers.changes!.changes as ReadonlyArray<{ kind: string }>).map((c) => c.kind)).toEqual([
      "burn",
      "trustline_authorization_changed",
      "clawback",
      "mint",
      "home_domain_changed",
      "issuer_flags_changed"
    ])
    expect(answers.compliance).toMatchObject({
      restrictions: [
        { name: "authorization_required", present: false },
        { name: "clawback_enabled", present: true },
        { name: "freeze_capability", present: true },
        { name: "contract_admin", present: false }
      ]
    })
    expect(answers.compliance?.statement).toContain("no conclusion")
    expect(answers.eligibility).toMatchObject({ wallet: HOLDER, eligible: true, balance: "100.0000000" })
  })

  test("an auth-required asset named by its SAC, a contract token and a missing wallet are described from the ledger", async () => {
    const { server } = await startReady()
    const rwabBySac = (await (await pay(server, "compliance", { asset: RWAB_SAC })).json()) as Record<string, unknown>
    expect(rwabBySac).toMatchObject({
      asset: { type: "stellar_asset_contract", code: "RWAB", contractId: RWAB_SAC },
      restrictions: [
        { name: "authorization_required", present: true },
        {},
        {},
        { name: "contract_admin", present: true }
      ]
    })
    const unauthorised = (await (await pay(server, "eligibility", { asset: RWAB, wallet: HOLDER })).json()) as Record<
      string,
      unknown
    >
    expect(unauthorised).toMatchObject({ eligible: false })
    expect(unauthorised.signals).toContainEqual(expect.objectContaining({ name: "trustline_authorized", ok: false }))
    const frozen = (await (await pay(server, "eligibility", { asset: CLAW, wallet: FROZEN_HOLDER })).json()) as Record<
      string,
      unknown
    >
    expect(frozen).toMatchObject({ eligible: false, balance: "40.0000000" })
    const missing = (await (
      await pay(server, "eligibility", { asset: CLAW, wallet: MISSING_WALLET })
    ).json()) as Record<string, unknown>
    expect(missing).toMatchObject({ eligible: false, signals: [{ name: "account_exists", ok: false }] })
    const token = (await (await pay(server, "inspect", { asset: TTF_CONTRACT })).json()) as Record<string, unknown>
    expect(token).toMatchObject({
      asset: { type: "contract_token", code: "TTF", issuer: null },
      metadata: { contract: { name: "Tokenized Treasury Fund", symbol: "TTF", decimals: 7 } },
      technical: { contract: { deployed: true, executable: "wasm", admin: TTF_NEW_ADMIN } },
      supply: null
    })
    const tokenChanges = (await (await pay(server, "changes", { asset: TTF_CONTRACT })).json()) as {
      changes: ReadonlyArray<{ kind: string }>
    }
    expect(tokenChanges.changes.map((c) => c.kind)).toEqual([
      "trustline_authorization_changed",
      "contract_admin_changed",
      "contract_instance_modified",
      "burn",
      "mint"
    ])
    const tokenHolder = (await (
      await pay(server, "eligibility", { asset: TTF_CONTRACT, wallet: HOLDER })
    ).json()) as Record<string, unknown>
    expect(tokenHolder).toMatchObject({ eligible: true, balance: "997.5000000" })
  })

  test("a settlement the facilitator refuses returns 402 with PAYMENT-RESPONSE and no data", async () => {
    const { fac, server } = await startReady()
    horizon.hold()
    const pending = pay(server, "inspect", validBody.inspect)
    await pollUntil(
      "the payment is verified and Horizon held",
      async () => fac.calls("/verify") === 1 && horizon.waiting() > 0,
      Boolean,
      LOOPBACK
    )
    fac.setMode("invalid")
    horizon.release()
    const response = await pending
    expect(response.status).toBe(402)
    const body = (await response.json()) as Record<string, unknown>
    expect(body).toEqual({ error: "SETTLEMENT_FAILED", message: expect.stringContaining("settlement failed") })
    expect(decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE") ?? "").success).toBe(false)
    expect(fac.calls("/settle")).toBe(1)
  })

  test("a settle that errors leaves the outcome unconfirmed: 502 and no data", async () => {
    const { fac, server } = await startReady()
    horizon.hold()
    const pending = pay(server, "changes", validBody.changes)
    await pollUntil(
      "the payment is verified and Horizon held",
      async () => fac.calls("/verify") === 1 && horizon.waiting() > 0,
      Boolean,
      LOOPBACK
    )
    fac.setMode("fail500")
    horizon.release()
    const response = await pending
    expect(response.status).toBe(502)
    expect(await response.json()).toMatchObject({ error: "SETTLEMENT_UNCONFIRMED" })
    expect(response.headers.get("PAYMENT-RESPONSE")).toBeNull()
    expect(fac.calls("/settle")).toBe(1)
  })

  test("the facilitator API key, when configured, is sent as a bearer token", async () => {
    const { fac, server } = await startReady({ facilitatorApiKey: "vertical-test-key" })
    expect((await pay(server, "inspect", validBody.inspect)).status).toBe(200)
    expect(fac.requests.map((r) => r.authorization)).toEqual(fac.requests.map(() => "Bearer vertical-test-key"))
  })
})

describe("vertical: paywall readiness", () => {
  it.effect("a facilitator that was down is retried on the backoff schedule until it is ready", () =>
    Effect.gen(function* () {
      const fac = facilitator()
      yield* Effect.promise(() => fac.refuse())
      const program = Effect.gen(function* () {
        const paywall = yield* Paywall
        yield* pollUntilEffect(
          "the paywall reports its facilitator not ready",
          paywall.status,
          (s) => s.detail.includes("not ready"),
          LOOPBACK
        )
        fac.listen()
        yield* Effect.promise(() => Bun.sleep(50))
        const beforeClock = fac.calls("/supported")
        yield* TestClock.adjust("1 second")
        const ready = yield* pollUntilEffect(
          "the paywall is ready after the backoff",
          paywall.status,
          (s) => s.ready,
          LOOPBACK
        )
        return { beforeClock, ready }
      })
      const { beforeClock, ready } = yield* program.pipe(
        Effect.provide(
          Paywall.Live({
            network: "stellar:testnet",
            asset: TESTNET_USDC,
            payTo: defaults.vertical.payTo,
            offers: Effect.succeed(exactOffers(defaults.vertical.prices)),
            facilitatorUrl: fac.url,
            facilitatorApiKey: null,
            timeoutMs: 5000
          })
        )
      )
      expect(beforeClock).toBe(0)
      expect(ready).toEqual({ ready: true, detail: `payments go through ${fac.url}/` })
      expect(fac.calls("/supported")).toBe(1)
    })
  )
})
