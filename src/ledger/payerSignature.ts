import { createHash, createPublicKey, verify } from "node:crypto"
import { buildAuthorizationEntryPreimage, StrKey, type xdr } from "@stellar/stellar-sdk"
import { addressCredentials } from "./authEntries.js"

/** DER prefix of an Ed25519 SubjectPublicKeyInfo: node:crypto verifies far faster than a JS Ed25519 (docs/performance.md, Ed25519). */
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex")

const ed25519Verifies = (publicKey: Uint8Array, payload: Uint8Array, signature: Uint8Array) => {
  try {
    const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, publicKey]), format: "der", type: "spki" })
    return verify(null, payload, key, signature)
  } catch {
    return false
  }
}

/** The `[{public_key, signature}]` vector an account's address credentials carry, or null when it is not one. */
const accountSignatures = (
  signature: xdr.ScVal
): ReadonlyArray<{ publicKey: Uint8Array; signature: Uint8Array }> | null => {
  if (signature.type !== "scvVec" || signature.vec === null || signature.vec.length === 0) return null
  const found: Array<{ publicKey: Uint8Array; signature: Uint8Array }> = []
  for (const item of signature.vec) {
    if (item.type !== "scvMap" || item.map === null || item.map.length !== 2) return null
    const field = (name: string) =>
      item.map!.find((e) => e.key.type === "scvSymbol" && e.key.sym.toString() === name)?.val
    const publicKey = field("public_key")
    const bytes = field("signature")
    if (publicKey?.type !== "scvBytes" || bytes?.type !== "scvBytes") return null
    found.push({ publicKey: publicKey.bytes.toBytes(), signature: bytes.bytes.toBytes() })
  }
  return found
}

/**
 * How the payer's authorisation entry is signed, for an account (G) payer, judged as the host
 * would check it: each signature in its vector over the entry's preimage (the legacy one for
 * `ADDRESS`, the address-bound one for `ADDRESS_V2`) on this network.
 * - `invalid`: some signature does not verify (it could never settle; refused before anything is
 *   reserved, since it would fail at the backend after the fee was reserved);
 * - `payer`: every signature verifies and one is by the payer's own key: `from` is who signed;
 * - `unproven`: every signature verifies but none is by the payer's key (another key, perhaps a
 *   multisig signer): which signers and weights the account accepts is the ledger's to know, so the
 *   payment may settle, but nothing here proves who sent it; a contract (C) payer, whose own
 *   `__check_auth` decides, is `unproven` too.
 * A signature by any other key never makes the request speak for the payer.
 */
export type PayerSignature = "invalid" | "payer" | "unproven"

export const payerSignature = (
  entry: xdr.SorobanAuthorizationEntry,
  payer: string,
  passphrase: string
): PayerSignature => {
  if (!StrKey.isValidEd25519PublicKey(payer)) return "unproven"
  const credentials = addressCredentials(entry)
  if (credentials === null) return "invalid"
  const signatures = accountSignatures(credentials.signature)
  if (signatures === null) return "invalid"
  const payload = createHash("sha256")
    .update(buildAuthorizationEntryPreimage(entry, credentials.signatureExpirationLedger, passphrase).toXdr())
    .digest()
  if (!signatures.every((s) => ed25519Verifies(s.publicKey, payload, s.signature))) return "invalid"
  const payerKey = StrKey.decodeEd25519PublicKey(payer)
  return signatures.some((s) => Buffer.from(s.publicKey).equals(payerKey)) ? "payer" : "unproven"
}
