import { createPublicKey, generateKeyPairSync, type KeyObject, sign } from "node:crypto"
import type { PaymentRequired } from "@x402/core/schemas"
import {
  createJWSOfferReceiptIssuer,
  extractJWSHeader,
  extractOffersFromPaymentRequired,
  extractPublicKeyFromKid,
  type JWSSignedOffer,
  OFFER_RECEIPT,
  type OfferPayload,
  type OfferReceiptIssuer,
  type ReceiptPayload,
  verifyOfferSignatureJWS,
  verifyReceiptSignatureJWS
} from "@x402/extensions/offer-receipt"

/**
 * The x402 `offer-receipt` extension (specs/extensions/extension-offer-and-receipt.md) as
 * Sextant speaks it: sellers sign offers and receipts as JWS with EdDSA, one Ed25519 key per
 * provider, named by a `did:jwk` key id. A `did:jwk` id carries the public key itself, which is
 * where the extension lets it be published; a verifier needs no request to another host.
 * Upstream's functions do the encoding, signing input and verification.
 */

/** The `did:jwk` key id of an Ed25519 public key (fragment `#0`, as did:jwk defines it); upstream imports the JWK only with its `alg`. */
export const didJwkOf = (publicKey: KeyObject): string => {
  const { x } = publicKey.export({ format: "jwk" })
  const jwk = Buffer.from(JSON.stringify({ kty: "OKP", crv: "Ed25519", x, alg: "EdDSA" })).toString("base64url")
  return `did:jwk:${jwk}#0`
}

/** An offer and receipt issuer over one Ed25519 key. */
export const ed25519Issuer = (privateKey: KeyObject): OfferReceiptIssuer => {
  const kid = didJwkOf(createPublicKey(privateKey))
  return createJWSOfferReceiptIssuer(kid, {
    kid,
    format: "jws",
    algorithm: "EdDSA",
    sign: async (bytes) => sign(null, bytes, privateKey).toString("base64url")
  })
}

/** A provider's signing key, made at start: its public half is in every key id it signs with. */
export const newProviderKey = (): KeyObject => generateKeyPairSync("ed25519").privateKey

/**
 * What a challenge's signed offers say about its terms:
 * - `unsigned`: no JWS offer (or only formats this deployment cannot verify);
 * - `signed`: every JWS offer verifies under its key and names exactly the option it indexes;
 * - `contradicted`: an offer verifies but the challenge asks other terms than it signed;
 * - `tampered`: an offer's signature does not verify, or its key id cannot be read.
 * `kid` is the signing key when one verified.
 */
export type OfferVerdict =
  | { readonly _tag: "unsigned" }
  | { readonly _tag: "signed"; readonly kid: string }
  | { readonly _tag: "contradicted"; readonly kid: string; readonly reason: string }
  | { readonly _tag: "tampered"; readonly reason: string }

/** Key ids a verifier resolves without the network: `did:web` would send a request to the seller's host. */
const SELF_CERTIFYING = /^did:(jwk|key):/

const TERMS = ["scheme", "network", "asset", "payTo", "amount"] as const

type ChallengeV2 = Extract<PaymentRequired, { x402Version: 2 }>

/** Bound on one JWS verification: a self-certifying key needs no request, so this only ends a runaway. */
const VERIFY_TIMEOUT_MS = 2_000

/**
 * The key a JWS is verified under, taken from its own `did:jwk` / `did:key` id and handed to the
 * verifier explicitly: upstream, given no key, resolves the id itself, with the network for
 * `did:web`. Any other id is refused here, before any lookup.
 */
type JwsSigner =
  | { readonly kid: string; readonly key: Awaited<ReturnType<typeof extractPublicKeyFromKid>> }
  | { readonly refusal: string }

const keyOfJws = async (signature: string, what: string): Promise<JwsSigner> => {
  let kid: unknown
  try {
    kid = extractJWSHeader(signature).kid
  } catch {
    return { refusal: `${what} is not a JWS` }
  }
  if (typeof kid !== "string" || !SELF_CERTIFYING.test(kid)) {
    return { refusal: `${what}'s key id is not a did:jwk or did:key (no key is looked up over the network)` }
  }
  try {
    return { kid, key: await extractPublicKeyFromKid(kid) }
  } catch {
    return { refusal: `${what}'s key id ${kid} names no usable key` }
  }
}

/** `verify` under VERIFY_TIMEOUT_MS; a timeout rejects like a bad signature. */
const withinTimeout = <A>(verify: Promise<A>): Promise<A> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`verification took over ${VERIFY_TIMEOUT_MS} ms`)), VERIFY_TIMEOUT_MS)
  })
  return Promise.race([verify, timeout]).finally(() => clearTimeout(timer))
}

const verifyOne = async (offer: JWSSignedOffer, challenge: ChallengeV2, nowSeconds: number) => {
  const signer = await keyOfJws(offer.signature, "a signed offer")
  if ("refusal" in signer) return { _tag: "tampered", reason: signer.refusal } as const
  const { kid } = signer
  let payload: OfferPayload
  try {
    payload = await withinTimeout(verifyOfferSignatureJWS(offer, signer.key))
  } catch {
    return { _tag: "tampered", reason: `a signed offer's signature does not verify under ${kid}` } as const
  }
  if (typeof payload.validUntil === "number" && payload.validUntil > 0 && payload.validUntil < nowSeconds) {
    return {
      _tag: "contradicted",
      kid,
      reason: `a signed offer expired at ${new Date(payload.validUntil * 1000).toISOString()}`
    } as const
  }
  const option = typeof offer.acceptIndex === "number" ? challenge.accepts[offer.acceptIndex] : undefined
  if (option === undefined)
    return { _tag: "contradicted", kid, reason: "a signed offer names no option of the challenge" } as const
  const asked: Record<string, string> = {
    ...Object.fromEntries(TERMS.map((t) => [t, String(option[t])])),
    resourceUrl: challenge.resource.url
  }
  const signed: Record<string, string> = {
    ...Object.fromEntries(TERMS.map((t) => [t, String(payload[t])])),
    resourceUrl: String(payload.resourceUrl)
  }
  const differs = Object.keys(asked).filter((term) => asked[term] !== signed[term])
  if (differs.length > 0) {
    const what = differs.map((t) => `${t} ${signed[t]} signed, ${asked[t]} asked`).join(", ")
    return { _tag: "contradicted", kid, reason: `the challenge contradicts its signed offer: ${what}` } as const
  }
  return { _tag: "signed", kid } as const
}

/** Where and when a challenge was met: the URL probed (null when the resource is not an HTTP URL, as an MCP tool's), and the time. */
export interface OfferContext {
  readonly nowMs: number
  readonly probedUrl: string | null
}

/**
 * Origin and path: a signed offer or receipt copied from another seller names another one; the
 * query may carry the caller's input, and the fragment names an MCP server's tool.
 */
const resourceOf = (raw: string): string | null => {
  try {
    const url = new URL(raw)
    return `${url.origin}${url.pathname}`
  } catch {
    return null
  }
}

/**
 * Judges the signed offers of a decoded challenge (v1 challenges carry none) met at `context`: an
 * expired offer (`validUntil` passed) or one signed for another resource than the one probed
 * contradicts the challenge, as terms it did not sign do.
 */
export const judgeOffers = async (challenge: PaymentRequired, context: OfferContext): Promise<OfferVerdict> => {
  if (challenge.x402Version !== 2) return { _tag: "unsigned" }
  const offers = extractOffersFromPaymentRequired(
    challenge as Parameters<typeof extractOffersFromPaymentRequired>[0]
  ).filter((o): o is JWSSignedOffer => o.format === "jws")
  if (offers.length === 0) return { _tag: "unsigned" }
  const verdicts = await Promise.all(
    offers.map((offer) => verifyOne(offer, challenge, Math.floor(context.nowMs / 1000)))
  )
  const worst = verdicts.find((v) => v._tag === "tampered") ?? verdicts.find((v) => v._tag === "contradicted")
  if (worst !== undefined) return worst
  const kids = new Set(verdicts.map((v) => (v._tag === "signed" ? v.kid : "")))
  if (kids.size > 1) return { _tag: "tampered", reason: "the offers of one challenge are signed by different keys" }
  const signed = verdicts[0]!
  const probed = context.probedUrl === null ? null : resourceOf(context.probedUrl)
  if (signed._tag === "signed" && probed !== null && resourceOf(challenge.resource.url) !== probed) {
    return {
      _tag: "contradicted",
      kid: signed.kid,
      reason: `the signed offers are for ${challenge.resource.url}, not the probed ${context.probedUrl}`
    }
  }
  return signed
}

/** The verdict as an observation records it: a note for the detail, and what counts against the seller. */
export const offerNote = (verdict: OfferVerdict): { readonly note: string | null; readonly against: string | null } => {
  switch (verdict._tag) {
    case "unsigned":
      return { note: null, against: null }
    case "signed":
      return { note: `offer signed by ${verdict.kid}`, against: null }
    case "contradicted":
      return { note: `signed by ${verdict.kid}`, against: verdict.reason }
    case "tampered":
      return { note: null, against: verdict.reason }
  }
}

/** The key id a healthy observation's detail names as its offers' signer (as `offerNote` writes it), or null. */
export const offerSignerIn = (detail: string | null): string | null =>
  detail?.match(/(?:^|; )offer signed by (did:(?:jwk|key):[^\s;]+)/)?.[1] ?? null

/** The seller's signed receipt a settle answer carries (`extensions["offer-receipt"].info.receipt`), as upstream reads it. */
export const receiptInAnswer = (answer: Readonly<Record<string, unknown>> | null): unknown => {
  const extensions = answer?.extensions
  if (typeof extensions !== "object" || extensions === null) return undefined
  const info = (extensions as Record<string, { info?: { receipt?: unknown } } | undefined>)[OFFER_RECEIPT]?.info
  return info?.receipt
}

/** What a seller's receipt must be about: the purchase the Sextant receipt is made for. */
export interface ReceiptPurchase {
  readonly transactionHash: string | null
  readonly network: string
  /** The URL of the resource the purchase was routed to. */
  readonly resourceUrl: string
  /** The key the probes last saw sign that resource's offers, null when they saw none. */
  readonly offerSigner: string | null
}

/**
 * A seller's JWS receipt checked on its own, before anything else is done with the request: the
 * signature verifies under the key its `did:jwk` / `did:key` id carries (any other id is refused
 * with no lookup). Answers the receipt's payload, or why it cannot be carried.
 */
export const verifySellerReceipt = async (receipt: {
  readonly signature: string
}): Promise<{ readonly payload: ReceiptPayload; readonly kid: string } | { readonly refusal: string }> => {
  const signer = await keyOfJws(receipt.signature, "the seller's receipt")
  if ("refusal" in signer) return signer
  try {
    return {
      payload: await withinTimeout(
        verifyReceiptSignatureJWS({ format: "jws", signature: receipt.signature }, signer.key)
      ),
      kid: signer.kid
    }
  } catch (e) {
    return { refusal: `the seller's receipt does not verify: ${e instanceof Error ? e.message : String(e)}` }
  }
}

/**
 * Why a verified seller receipt is not about this purchase, or null: signed by the key the probes
 * saw sign the resource's offers (when they saw one), its network and resource (origin and path)
 * the purchase's, and a transaction it names the purchase's.
 */
export const sellerReceiptMismatch = (
  payload: ReceiptPayload,
  kid: string,
  purchase: ReceiptPurchase
): string | null => {
  if (purchase.offerSigner !== null && kid !== purchase.offerSigner) {
    return `the seller's receipt is signed by ${kid}, not by the key that signs the resource's offers (${purchase.offerSigner})`
  }
  if (payload.network !== purchase.network)
    return `the seller's receipt is about network ${String(payload.network)}, not this payment's (${purchase.network})`
  const paid = resourceOf(purchase.resourceUrl)
  if (paid === null || resourceOf(String(payload.resourceUrl)) !== paid)
    return `the seller's receipt is about ${String(payload.resourceUrl)}, not the resource paid (${purchase.resourceUrl})`
  if (
    payload.transaction !== "" &&
    payload.transaction !== undefined &&
    payload.transaction !== purchase.transactionHash
  ) {
    return `the seller's receipt names transaction ${payload.transaction}, not this payment's (${purchase.transactionHash ?? "none"})`
  }
  return null
}
