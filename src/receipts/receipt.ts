import { Effect, Either } from "effect"
import type { CommerceReceipt, ReceiptVerification, SignatureAlgorithm } from "../domain/receipts.js"
import { type CanonicalJsonError, canonicalBytes } from "../encoding/canonicalJson.js"
import { decodeBase64, encodeBase64, parsePublicKey, verifyEd25519 } from "./ed25519.js"
import { hmacMatches, hmacSignerId } from "./hmac.js"
import type { SignerShape } from "./Signer.js"

export type UnsignedReceipt = Omit<CommerceReceipt, "serviceSignature" | "serviceSigner" | "signatureAlgorithm">

/** A verification outcome before it is tied to a stored receipt id. */
export type ReceiptCheck = Omit<ReceiptVerification, "receiptId">

/** Who is expected to have signed: the live signer, or a key or secret a holder supplies. */
type SignerIdentity = Pick<SignerShape, "algorithm" | "signerId" | "publicKey">

/** SPEC "Receipt signature rules" rule 1: everything but the three signature fields is signed. */
export const signedBody = (receipt: Record<string, unknown>): Record<string, unknown> => {
  const { serviceSignature: _signature, serviceSigner: _signer, signatureAlgorithm: _algorithm, ...body } = receipt
  return body
}

export const signReceipt = (
  body: UnsignedReceipt,
  signer: SignerShape
): Effect.Effect<CommerceReceipt, CanonicalJsonError> =>
  Effect.flatMap(canonicalBytes(body), (message) =>
    Effect.map(signer.sign(message), (signature) => ({
      ...body,
      serviceSignature: encodeBase64(signature),
      serviceSigner: signer.signerId,
      signatureAlgorithm: signer.algorithm
    }))
  )

/** A receipt taken apart for checking: the claimed signer and algorithm, the signature and the signed bytes. */
interface SignedEnvelope {
  readonly algorithm: SignatureAlgorithm
  readonly serviceSigner: string
  readonly signature: Uint8Array
  readonly message: Uint8Array
}

const invalid = (algorithm: ReceiptCheck["algorithm"], signer: string | null, reason: string): ReceiptCheck => ({
  valid: false,
  algorithm,
  signer,
  reason
})

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Works on the receipt as received (parsed JSON), not on a schema-decoded copy: decoding would
 * drop unknown members, and a member added after signing must make the signature fail.
 */
const openReceipt = (receipt: unknown): Either.Either<SignedEnvelope, ReceiptCheck> => {
  if (!isRecord(receipt)) return Either.left(invalid("unknown", null, "a receipt is a JSON object"))
  const { signatureAlgorithm: algorithm, serviceSigner, serviceSignature } = receipt
  const signer = typeof serviceSigner === "string" ? serviceSigner : null
  if (algorithm !== "ed25519" && algorithm !== "hmac-sha256") {
    return Either.left(invalid("unknown", signer, "signatureAlgorithm is neither ed25519 nor hmac-sha256"))
  }
  if (signer === null) return Either.left(invalid(algorithm, null, "serviceSigner is missing"))
  const signature = typeof serviceSignature === "string" ? decodeBase64(serviceSignature) : null
  if (signature === null) return Either.left(invalid(algorithm, signer, "serviceSignature is not base64"))
  return Either.match(canonicalBytes(signedBody(receipt)), {
    onLeft: (e) => Either.left(invalid(algorithm, signer, `the body has no canonical JSON form: ${e.message}`)),
    onRight: (message) => Either.right({ algorithm, serviceSigner: signer, signature, message })
  })
}

/** An Ed25519 `serviceSigner` may be written as base64 or as a G... address: compare the key bytes. */
const names = (envelope: SignedEnvelope, expected: SignerIdentity): boolean => {
  if (expected.publicKey === null) return envelope.serviceSigner === expected.signerId
  const named = parsePublicKey(envelope.serviceSigner)
  return Either.isRight(named) && Buffer.from(named.right).equals(Buffer.from(expected.publicKey))
}

/** Algorithm and signer identity, checked before the signature: a receipt must name the key that signed it. */
const mismatch = (envelope: SignedEnvelope, expected: SignerIdentity): ReceiptCheck | null => {
  if (envelope.algorithm !== expected.algorithm) {
    return invalid(
      envelope.algorithm,
      envelope.serviceSigner,
      `signed with ${envelope.algorithm}, expected ${expected.algorithm}`
    )
  }
  if (!names(envelope, expected)) {
    return invalid(
      envelope.algorithm,
      envelope.serviceSigner,
      `serviceSigner ${envelope.serviceSigner} is not the expected signer ${expected.signerId}`
    )
  }
  return null
}

const concluded = (envelope: SignedEnvelope, expected: SignerIdentity, valid: boolean): ReceiptCheck =>
  valid
    ? {
        valid,
        algorithm: envelope.algorithm,
        signer: expected.signerId,
        reason: `${envelope.algorithm} signature verified`
      }
    : invalid(envelope.algorithm, expected.signerId, "the signature does not match the receipt's canonical bytes")

/** How a holder checks without the service: which identity to expect, and a synchronous check. */
interface OfflineVerifier {
  readonly expected: SignerIdentity
  readonly verify: (message: Uint8Array, signature: Uint8Array) => boolean
}

export interface ReceiptKeys {
  /** The Ed25519 key to trust: raw 32 bytes, base64 or a G... address. Defaults to the receipt's serviceSigner. */
  readonly publicKey?: Uint8Array | string
  /** Only the service holds it; lets it (or a test) check HMAC receipts. */
  readonly hmacSecret?: string
}

const offlineVerifier = (envelope: SignedEnvelope, keys: ReceiptKeys): Either.Either<OfflineVerifier, ReceiptCheck> => {
  if (envelope.algorithm === "hmac-sha256") {
    if (keys.hmacSecret === undefined) {
      return Either.left(
        invalid(
          "hmac-sha256",
          envelope.serviceSigner,
          "hmac-sha256 receipts are attestations only the issuing service can check (GET /v1/receipts/{id}/verify)"
        )
      )
    }
    const secret = keys.hmacSecret
    return Either.right({
      expected: { algorithm: "hmac-sha256", signerId: hmacSignerId(secret), publicKey: null },
      verify: (message, mac) => hmacMatches(secret, message, mac)
    })
  }
  const given = keys.publicKey
  const key =
    given === undefined
      ? Either.mapLeft(parsePublicKey(envelope.serviceSigner), (reason) => `serviceSigner: ${reason}`)
      : typeof given === "string"
        ? Either.mapLeft(parsePublicKey(given), (reason) => `given key: ${reason}`)
        : Either.right(given)
  return Either.match(key, {
    onLeft: (reason) => Either.left(invalid("ed25519", envelope.serviceSigner, reason)),
    onRight: (publicKey) =>
      Either.right({
        expected: { algorithm: "ed25519", signerId: encodeBase64(publicKey), publicKey },
        verify: (message, signature) => verifyEd25519(publicKey, message, signature)
      })
  })
}

/**
 * Checks a receipt with no service running (SPEC "Authentication" rule 4): an Ed25519 receipt
 * against its own `serviceSigner`, or against `keys.publicKey` when the holder trusts a specific
 * key. Any change to a signed member, the signature, the signer or the algorithm makes it invalid;
 * a re-ordered or re-spaced copy of the same data stays valid, since only canonical bytes count.
 */
export const verifyReceipt = (receipt: unknown, keys: ReceiptKeys = {}): ReceiptCheck =>
  Either.merge(
    Either.flatMap(openReceipt(receipt), (envelope) =>
      Either.map(
        offlineVerifier(envelope, keys),
        ({ expected, verify }) =>
          mismatch(envelope, expected) ?? concluded(envelope, expected, verify(envelope.message, envelope.signature))
      )
    )
  )

/** Checks a receipt against the live signer: the only way to check an HMAC receipt. */
export const verifyWithSigner = (receipt: unknown, signer: SignerShape): Effect.Effect<ReceiptCheck> =>
  Either.match(openReceipt(receipt), {
    onLeft: Effect.succeed,
    onRight: (envelope) => {
      const refused = mismatch(envelope, signer)
      return refused !== null
        ? Effect.succeed(refused)
        : Effect.map(signer.verify(envelope.message, envelope.signature), (valid) => concluded(envelope, signer, valid))
    }
  })
