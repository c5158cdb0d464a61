import { createPublicKey, type KeyObject, verify } from "node:crypto"
import { StrKey } from "@stellar/stellar-sdk"
import { Either } from "effect"

/** Raw Ed25519 public keys are 32 bytes, signatures 64 (RFC 8032). */
export const PUBLIC_KEY_BYTES = 32
export const SIGNATURE_BYTES = 64

/** Standard base64 with padding, round-trip checked so that no other text decodes to the same key. */
export const decodeBase64 = (text: string): Uint8Array | null => {
  const bytes = Buffer.from(text, "base64")
  return bytes.toString("base64") === text ? new Uint8Array(bytes) : null
}

export const encodeBase64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64")

/** The same key as a Stellar account id (G...), for people who think in Stellar addresses. */
export const stellarPublicKey = (raw: Uint8Array): string => StrKey.encodeEd25519PublicKey(Buffer.from(raw))

/**
 * A public key as people pass it around: base64 of the raw 32 bytes (what `serviceSigner`
 * holds) or a Stellar G... strkey (what the signer disclosure also shows).
 */
export const parsePublicKey = (text: string): Either.Either<Uint8Array, string> => {
  if (StrKey.isValidEd25519PublicKey(text)) return Either.right(new Uint8Array(StrKey.decodeEd25519PublicKey(text)))
  const bytes = decodeBase64(text)
  if (bytes === null) return Either.left("public key is neither base64 nor a Stellar G... address")
  if (bytes.length !== PUBLIC_KEY_BYTES) {
    return Either.left(`public key is ${bytes.length} bytes, an Ed25519 key is ${PUBLIC_KEY_BYTES}`)
  }
  return Either.right(bytes)
}

/** node:crypto takes raw Ed25519 keys through JWK (RFC 8037: `x` is the base64url raw key). */
export const publicKeyObject = (raw: Uint8Array): KeyObject =>
  createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(raw).toString("base64url") }, format: "jwk" })

export const rawPublicKey = (key: KeyObject): Uint8Array =>
  new Uint8Array(Buffer.from(createPublicKey(key).export({ format: "jwk" }).x ?? "", "base64url"))

/**
 * Ed25519 verification with node:crypto, the fastest of the implementations bench/receipts.ts
 * measures. A key that is not a curve point makes node:crypto throw: that is "not valid", not a crash.
 */
export const verifyEd25519 = (publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean => {
  if (publicKey.length !== PUBLIC_KEY_BYTES || signature.length !== SIGNATURE_BYTES) return false
  try {
    return verify(null, message, publicKeyObject(publicKey), signature)
  } catch {
    return false
  }
}
