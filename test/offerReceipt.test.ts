import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { decodePaymentRequiredHeader, encodePaymentRequiredHeader } from "@x402/core/http"
import {
  extractOffersFromPaymentRequired,
  extractPublicKeyFromKid,
  type JWSSignedOffer,
  verifyOfferSignatureJWS
} from "@x402/extensions/offer-receipt"
import { Effect, Exit, Scope } from "effect"
import { TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { ed25519Issuer, judgeOffers, newProviderKey } from "../src/extensions/offerReceipt.js"
import { exactOffers, makePaywall, type PaywallShape } from "../src/vertical/Paywall.js"
import { advertised } from "./fixtures/observations.js"
import { entry } from "./fixtures/verificationStack.js"
import { FIXTURE_PAY_TO } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"
import { refusal, startServer, testConfig } from "./support/server.js"

/**
 * A seller built from the vertical's own paywall (upstream's offer-receipt extension, the
 * provider's Ed25519 key), serving its challenges as they are, with another price than it signed,
 * and with a forged signature.
 */
const prices = (amount: string) =>
  exactOffers({ inspect: amount, changes: amount, compliance: amount, eligibility: amount })
const scope = Effect.runSync(Scope.make())
const honestKey = newProviderKey()
const paywallAt = (amount: string, signingKey = newProviderKey()) =>
  it.run(
    makePaywall({
      network: "stellar:testnet",
      asset: TESTNET_USDC,
      payTo: FIXTURE_PAY_TO,
      offers: Effect.succeed(prices(amount)),
      // Never ready: challenges need no facilitator.
      facilitatorUrl: "http://127.0.0.1:9/x402",
      facilitatorApiKey: null,
      timeoutMs: 1000,
      signingKey
    }).pipe(Scope.extend(scope))
  )

let honest: PaywallShape
let cheapSigner: PaywallShape
let seller: ReturnType<typeof Bun.serve>
let server: Awaited<ReturnType<typeof startServer>>
let sellerOrigin = ""

const challengeOf = async (paywall: PaywallShape, url: string) =>
  decodePaymentRequiredHeader(await it.run(paywall.challenge("inspect", { url })))

/** The probe's verdict on a challenge as the core decoder typed it (the schema's type is its encoded twin). */
const judge = (
  challenge: Awaited<ReturnType<typeof challengeOf>>,
  context: { nowMs?: number; probedUrl?: string | null } = {}
) =>
  judgeOffers(challenge as Parameters<typeof judgeOffers>[0], {
    nowMs: context.nowMs ?? Date.now(),
    probedUrl: context.probedUrl ?? null
  })

/** Flips one character in the middle of the signature part of a JWS. */
const forge = (jws: string) => {
  const [h, p, s] = jws.split(".")
  const i = Math.floor(s!.length / 2)
  return `${h}.${p}.${s!.slice(0, i)}${s![i] === "A" ? "B" : "A"}${s!.slice(i + 1)}`
}

beforeAll(async () => {
  honest = await paywallAt(advertised.amount, honestKey)
  // Signs $0.0005 and, below, asks the catalog's $0.001.
  cheapSigner = await paywallAt("5000")
  seller = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (req) => {
      const path = new URL(req.url).pathname
      const challenge = await challengeOf(path === "/contradicted" ? cheapSigner : honest, req.url)
      if (path === "/contradicted") challenge.accepts[0]!.amount = advertised.amount
      if (path === "/tampered") {
        const offers = extractOffersFromPaymentRequired(challenge) as Array<JWSSignedOffer>
        offers[0]!.signature = forge(offers[0]!.signature)
      }
      return new Response("{}", {
        status: 402,
        headers: { "PAYMENT-REQUIRED": encodePaymentRequiredHeader(challenge), "content-type": "application/json" }
      })
    }
  })
  const origin = `http://127.0.0.1:${seller.port}`
  sellerOrigin = origin
  const base = testConfig()
  server = await startServer(
    testConfig({
      catalog: ["signed", "contradicted", "tampered"].map((name) => entry(name, `${origin}/${name}`)),
      probes: { ...base.probes, trustedOrigins: [origin], timeoutMs: 2000 }
    })
  )
})
afterAll(async () => {
  await server.close()
  seller.stop(true)
  await it.run(Scope.close(scope, Exit.void))
})

describe("signed offers (offer-receipt, JWS EdDSA, did:jwk)", () => {
  test("the vertical's paywall signs each offer with its provider key, verifiable by upstream's verifier", async () => {
    const challenge = await challengeOf(honest, "http://127.0.0.1/inspect")
    const [offer] = extractOffersFromPaymentRequired(challenge) as Array<JWSSignedOffer>
    expect(offer!.format).toBe("jws")
    const kid = JSON.parse(Buffer.from(offer!.signature.split(".")[0]!, "base64url").toString()).kid as string
    expect(kid).toStartWith("did:jwk:")
    const payload = await verifyOfferSignatureJWS(offer!, await extractPublicKeyFromKid(kid))
    expect(payload).toMatchObject({
      resourceUrl: "http://127.0.0.1/inspect",
      amount: advertised.amount,
      payTo: FIXTURE_PAY_TO,
      asset: TESTNET_USDC
    })
    expect(await judge(challenge)).toEqual({ _tag: "signed", kid })
    // Two providers, two keys.
    const other = await challengeOf(cheapSigner, "http://127.0.0.1/inspect")
    expect(((await judge(other)) as { kid: string }).kid).not.toBe(kid)
  })

  const validate = (resourceId: string) =>
    it.run(server.client.verification.validate({ payload: { resourceId: ResourceId.make(resourceId) } }))
  const detailOf = (id: string) => it.run(server.client.resources.get({ path: { id: ResourceId.make(id) } }))

  test("a probe records who signed the terms", async () => {
    const probe = await validate("signed")
    expect(probe.healthy).toBe(true)
    expect(probe.observation?.detail).toMatch(/^offer signed by did:jwk:/)
  })

  test("a seller receipt for that resource counts only when signed by the key its offers are signed with", async () => {
    // An Ed25519 issuer signs JWS receipts, the one form the contract takes.
    const receiptBy = async (key: ReturnType<typeof newProviderKey>) => {
      const receipt = await ed25519Issuer(key).issueReceipt(`${sellerOrigin}/signed`, "GPAYER", "stellar:testnet")
      if (receipt.format !== "jws") throw new Error(`expected a JWS receipt, got ${receipt.format}`)
      return receipt
    }
    const create = (sellerReceipt: Awaited<ReturnType<typeof receiptBy>>) =>
      server.client.receipts.create({
        payload: {
          request: { capability: "fixture.probe", optimizeFor: "cheapest" },
          resourceId: ResourceId.make("signed"),
          payment: { network: "stellar:testnet", scheme: "exact", asset: TESTNET_USDC, amount: advertised.amount },
          response: { status: 200, body: "{}" },
          sellerReceipt
        }
      })
    // INVALID_REQUEST is the contract's 400.
    const stranger = await refusal(create(await receiptBy(newProviderKey())))
    expect(stranger).toMatchObject({ error: "INVALID_REQUEST" })
    expect(stranger.message).toContain("not by the key that signs the resource's offers")
    expect((await it.run(create(await receiptBy(honestKey)))).receiptId).toBeString()
  })

  test("a seller asking another price than it signed is recorded against it", async () => {
    const probe = await validate("contradicted")
    expect(probe.observation?.detail).toContain(
      "the challenge contradicts its signed offer: amount 5000 signed, 10000 asked"
    )
    // The contradiction is the evidence a catalog contradiction is: the seller is quarantined, the honest one is not.
    const detail = await detailOf("contradicted")
    expect(detail.resource.status).toBe("QUARANTINED")
    expect(detail.transitions[0]?.reason).toContain("contradicts its signed offer")
    expect((await detailOf("signed")).resource.status).not.toBe("QUARANTINED")
  })

  test("a tampered signature is refused: the terms do not count as signed, and it is recorded", async () => {
    const probe = await validate("tampered")
    expect(probe.observation?.detail).toContain("signature does not verify")
    expect(probe.observation?.detail).not.toContain("offer signed by")
    expect((await detailOf("tampered")).resource.status).toBe("QUARANTINED")
  })

  test("an offer past its validUntil contradicts the challenge that still carries it", async () => {
    const challenge = await challengeOf(honest, "http://127.0.0.1/inspect")
    expect((await judge(challenge))._tag).toBe("signed")
    const later = await judge(challenge, { nowMs: Date.now() + 3_600_000 })
    expect(later).toMatchObject({ _tag: "contradicted" })
    expect((later as { reason: string }).reason).toContain("expired")
  })

  test("offers signed for another resource than the one probed contradict the challenge (a copied offer)", async () => {
    const challenge = await challengeOf(honest, "http://127.0.0.1/inspect")
    expect((await judge(challenge, { probedUrl: "http://127.0.0.1/inspect?asset=x" }))._tag).toBe("signed")
    const copied = await judge(challenge, { probedUrl: "http://127.0.0.1:4999/inspect" })
    expect(copied).toMatchObject({ _tag: "contradicted" })
    expect((copied as { reason: string }).reason).toContain("not the probed http://127.0.0.1:4999/inspect")
  })

  test("a challenge without offers is unsigned", async () => {
    const challenge = await challengeOf(honest, "http://127.0.0.1/inspect")
    delete challenge.extensions
    expect(await judge(challenge)).toEqual({ _tag: "unsigned" })
  })
})
