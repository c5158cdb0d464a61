import { describe, expect, test } from "bun:test"
import { x402Client } from "@x402/core/client"
import type { PaymentRequired, PaymentRequirements, SchemeNetworkClient } from "@x402/core/types"
import { declarePaymentIdentifierExtension, PAYMENT_ID_PATTERN } from "@x402/extensions/payment-identifier"
import { guardClient, outcomeOf, type SextantGuardOptions } from "../src/client/guard.js"
import { TESTNET_USDC } from "../src/config.js"
import { payee } from "./fixtures/evidence.js"

/**
 * The guard's hooks on a stock x402Client, with preflight answered by a function in place of
 * Sextant's HTTP endpoint (the `fetch` option): what the client creates, or why it refuses.
 */
const requirements: PaymentRequirements = {
  scheme: "exact",
  network: "stellar:testnet",
  asset: TESTNET_USDC,
  amount: "10000",
  payTo: payee(1),
  maxTimeoutSeconds: 60,
  extra: {}
}
const challenge = (extensions?: Record<string, unknown>): PaymentRequired => ({
  x402Version: 2,
  resource: { url: "http://127.0.0.1:9/paid" },
  accepts: [requirements],
  ...(extensions === undefined ? {} : { extensions })
})

let signed = 0
const scheme: SchemeNetworkClient = {
  scheme: "exact",
  createPaymentPayload: async (x402Version) => {
    signed++
    return { x402Version, payload: { transaction: "AAAA" } }
  }
}

/** A client whose preflight answers `verdict` (or fails to answer), recording what it was asked. */
const clientWith = (answer: { status: number; body: unknown } | Error, options: Partial<SextantGuardOptions> = {}) => {
  const asked: Array<unknown> = []
  const fake = (async (_url: string, init: RequestInit) => {
    asked.push(JSON.parse(String(init.body)))
    if (answer instanceof Error) throw answer
    return new Response(JSON.stringify(answer.body), {
      status: answer.status,
      headers: { "content-type": "application/json" }
    })
  }) as unknown as typeof fetch
  const client = x402Client.fromConfig({
    schemes: [{ network: "stellar:testnet", client: scheme }],
    spendControls: false
  })
  guardClient(client, { service: "http://sextant.invalid", fetch: fake, ...options })
  return { client, asked }
}

const verdict = (v: "ALLOW" | "WARN" | "DENY") => ({
  status: 200,
  body: {
    verdict: v,
    reasons:
      v === "ALLOW" ? [] : [{ code: "PRICE_ABOVE_OBSERVED", severity: v, message: "asks more", resourceId: null }]
  }
})

describe("guardClient", () => {
  test("asks preflight with the challenge, the chosen option, its URL and the policy before signing", async () => {
    const { client, asked } = clientWith(verdict("ALLOW"), { policy: { maxPricePerRequestUsd: 0.01 } })
    await client.createPaymentPayload(challenge())
    expect(asked).toEqual([
      {
        paymentRequired: challenge(),
        requirements,
        url: "http://127.0.0.1:9/paid",
        policy: { maxPricePerRequestUsd: 0.01 }
      }
    ])
  })

  test("DENY refuses before the scheme signs; WARN pays unless refuseOnWarn", async () => {
    const before = signed
    await expect(clientWith(verdict("DENY")).client.createPaymentPayload(challenge())).rejects.toThrow(
      "Payment creation aborted: Sextant preflight DENY: PRICE_ABOVE_OBSERVED (asks more)"
    )
    expect(signed).toBe(before)
    await clientWith(verdict("WARN")).client.createPaymentPayload(challenge())
    expect(signed).toBe(before + 1)
    await expect(
      clientWith(verdict("WARN"), { refuseOnWarn: true }).client.createPaymentPayload(challenge())
    ).rejects.toThrow("Sextant preflight WARN")
    expect(signed).toBe(before + 1)
  })

  test("no verdict (an error answer, a refused connection): fail closed by default, open when told", async () => {
    const error = { status: 400, body: { error: "INVALID_REQUEST", message: "bad" } }
    await expect(clientWith(error).client.createPaymentPayload(challenge())).rejects.toThrow(
      "Sextant answered 400: bad"
    )
    await expect(clientWith(new Error("ECONNREFUSED")).client.createPaymentPayload(challenge())).rejects.toThrow(
      "fail closed"
    )
    const paid = await clientWith(new Error("ECONNREFUSED"), { failMode: "open" }).client.createPaymentPayload(
      challenge()
    )
    expect(paid.payload).toEqual({ transaction: "AAAA" })
  })

  test("adds a payment identifier only when the challenge offers the extension, and leaves the challenge as it was", async () => {
    const offered = challenge({ "payment-identifier": declarePaymentIdentifierExtension(false) })
    const paid = await clientWith(verdict("ALLOW")).client.createPaymentPayload(offered)
    const id = (paid.extensions!["payment-identifier"] as { info: { id: string; required: boolean } }).info
    expect(id.required).toBe(false)
    expect(id.id).toMatch(PAYMENT_ID_PATTERN)
    expect(id.id.length).toBeGreaterThanOrEqual(16)
    expect((offered.extensions!["payment-identifier"] as { info: Record<string, unknown> }).info).toEqual({
      required: false
    })
    // A second payment gets a new identifier: one per payment, not per client.
    const again = await clientWith(verdict("ALLOW")).client.createPaymentPayload(offered)
    expect((again.extensions!["payment-identifier"] as { info: { id: string } }).info.id).not.toBe(id.id)
    const plain = await clientWith(verdict("ALLOW")).client.createPaymentPayload(challenge())
    expect(plain.extensions?.["payment-identifier"]).toBeUndefined()
    const off = await clientWith(verdict("ALLOW"), { paymentIdentifier: false }).client.createPaymentPayload(offered)
    expect((off.extensions!["payment-identifier"] as { info: Record<string, unknown> }).info.id).toBeUndefined()
  })

  test("reports a paid request's settlement only when it names a transaction and a URL", () => {
    const paymentPayload = {
      x402Version: 2,
      resource: { url: "http://127.0.0.1:9/paid" },
      accepted: requirements,
      payload: {}
    }
    const settleResponse = (success: boolean, transaction: string) => ({
      success,
      transaction,
      network: "stellar:testnet" as const
    })
    const hash = "AB".repeat(32)
    expect(outcomeOf({ paymentPayload, requirements, settleResponse: settleResponse(true, hash) })).toEqual({
      url: "http://127.0.0.1:9/paid",
      outcome: "settled",
      transactionHash: hash.toLowerCase()
    })
    expect(outcomeOf({ paymentPayload, requirements, settleResponse: settleResponse(false, hash) })?.outcome).toBe(
      "refused"
    )
    expect(outcomeOf({ paymentPayload, requirements, settleResponse: settleResponse(false, "") })).toBeNull()
    expect(outcomeOf({ paymentPayload, requirements, paymentRequired: challenge() })).toBeNull()
  })
})
