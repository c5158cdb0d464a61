import type { PaymentRequired } from "@x402/core/schemas"
import {
  createJWSOfferReceiptIssuer,
  extractJWSHeader,
  extractOffersFromPaymentRequired,
  extractPublicKeyFromKid,
  type JWSSignedOffer,
  type OfferPayload,
  type OfferReceiptIssuer,
  OFFER_RECEIPT,
  verifyOfferSignatureJWS,
  verifyReceiptSignatureJWS
} from "@x402/extensions/offer-receipt"
import { createPublicKey, generateKeyPairSync, type KeyObject, sign } from "node:crypto"

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

const verifyOne = async (offer: JWSSignedOffer, challenge: ChallengeV2) => {
  let kid: unknown
  try {
    kid = extractJWSHeader(offer.signature).kid
  } catch {
    return { _tag: "tampered", reason: "a signed offer is not a JWS" } as const
  }
  if (typeof kid !== "string" || !SELF_CERTIFYING.test(kid)) {
    return { _tag: "tampered", reason: "a signed offer's key id is not a did:jwk or did:key" } as const
  }
  let payload: OfferPayload
  try {
    payload = await verifyOfferSignatureJWS(offer, await extractPublicKeyFromKid(kid))
  } catch {
    return { _tag: "tampered", reason: `a signed offer's signature does not verify under ${kid}` } as const
  }
  const option = typeof offer.acceptIndex === "number" ? challenge.accepts[offer.acceptIndex] : undefined
  if (option === undefined) return { _tag: "contradicted", kid, reason: "a signed offer names no option of the challenge" } as const
  const asked: Record<string, string> = { ...Object.fromEntries(TERMS.map((t) => [t, String(option[t])])), resourceUrl: challenge.resource.url }
  const signed: Record<string, string> = { ...Object.fromEntries(TERMS.map((t) => [t, String(payload[t])])), resourceUrl: String(payload.resourceUrl) }
  const differs = Object.keys(asked).filter((term) => asked[term] !== signed[term])
  if (differs.length > 0) {
    const what = differs.map((t) => `${t} ${signed[t]} signed, ${asked[t]} asked`).join(", ")
    return { _tag: "contradicted", kid, reason: `the challenge contradicts its signed offer: ${what}` } as const
  }
  return { _tag: "signed", kid } as const
}

/** Judges the signed offers of a decoded challenge (v1 challenges carry none). */
export const judgeOffers = async (challenge: PaymentRequired): Promise<OfferVerdict> => {
  if (challenge.x402Version !== 2) return { _tag: "unsigned" }
  const offers = extractOffersFromPaymentRequired(challenge as Parameters<typeof extractOffersFromPaymentRequired>[0]).filter(
    (o): o is JWSSignedOffer => o.format === "jws"
  )
  if (offers.length === 0) return { _tag: "unsigned" }
  const verdicts = await Promise.all(offers.map((offer) => verifyOne(offer, challenge)))
  const worst = verdicts.find((v) => v._tag === "tampered") ?? verdicts.find((v) => v._tag === "contradicted")
  if (worst !== undefined) return worst
  const kids = new Set(verdicts.map((v) => (v._tag === "signed" ? v.kid : "")))
  if (kids.size > 1) return { _tag: "tampered", reason: "the offers of one challenge are signed by different keys" }
  return verdicts[0]!
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

/** The seller's signed receipt a settle answer carries (`extensions["offer-receipt"].info.receipt`), as upstream reads it. */
export const receiptInAnswer = (answer: Readonly<Record<string, unknown>> | null): unknown => {
  const extensions = answer?.extensions
  if (typeof extensions !== "object" || extensions === null) return undefined
  const info = (extensions as Record<string, { info?: { receipt?: unknown } } | undefined>)[OFFER_RECEIPT]?.info
  return info?.receipt
}

/**
 * Why a seller's JWS receipt cannot be carried, or null: its signature must verify under the key
 * its `did:jwk` id names, and a transaction it names must be the purchase's.
 */
export const sellerReceiptRefusal = async (receipt: { readonly signature: string }, transactionHash: string | null): Promise<string | null> => {
  try {
    const payload = await verifyReceiptSignatureJWS({ format: "jws", signature: receipt.signature })
    if (payload.transaction !== "" && payload.transaction !== undefined && payload.transaction !== transactionHash) {
      return `the seller's receipt names transaction ${payload.transaction}, not this payment's (${transactionHash ?? "none"})`
    }
    return null
  } catch (e) {
    return `the seller's receipt does not verify: ${e instanceof Error ? e.message : String(e)}`
  }
}

