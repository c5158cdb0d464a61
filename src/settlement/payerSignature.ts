import { buildAuthorizationEntryPreimage, StrKey, type xdr } from "@stellar/stellar-sdk"
import { createHash, createPublicKey, verify } from "node:crypto"
import { addressCredentials } from "../ledger/authEntries.js"

/** DER prefix of an Ed25519 SubjectPublicKeyInfo: node:crypto verifies about 25 times faster than a JS Ed25519. */
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
const accountSignatures = (signature: xdr.ScVal): ReadonlyArray<{ publicKey: Uint8Array; signature: Uint8Array }> | null => {
  if (signature.type !== "scvVec" || signature.vec === null || signature.vec.length === 0) return null
  const found: Array<{ publicKey: Uint8Array; signature: Uint8Array }> = []
  for (const item of signature.vec) {
    if (item.type !== "scvMap" || item.map === null || item.map.length !== 2) return null
    const field = (name: string) => item.map!.find((e) => e.key.type === "scvSymbol" && e.key.sym.toString() === name)?.val
    const publicKey = field("public_key")
    const bytes = field("signature")
    if (publicKey?.type !== "scvBytes" || bytes?.type !== "scvBytes") return null
    found.push({ publicKey: publicKey.bytes.toBytes(), signature: bytes.bytes.toBytes() })
  }
  return found
}

/**
 * Whether the payer's authorisation entry is signed as the host will check it, for an account (G)
 * payer: every signature in its vector verifies (Ed25519) over the entry's preimage (the legacy
 * one for `ADDRESS`, the address-bound one for `ADDRESS_V2`) on this network. Which signers and
 * weights an account requires is the ledger's to know, so a multisig account's signatures are
 * only checked to be real. Null for a contract (C) payer: its own `__check_auth` decides.
 * A settle with a signature that cannot verify would fail at the backend after the fee was
 * reserved; checked here, it never reserves anything.
 */
export const payerSignatureValid = (entry: xdr.SorobanAuthorizationEntry, payer: string, passphrase: string): boolean | null => {
  if (!StrKey.isValidEd25519PublicKey(payer)) return null
  const credentials = addressCredentials(entry)
  if (credentials === null) return false
  const signatures = accountSignatures(credentials.signature)
  if (signatures === null) return false
  const payload = createHash("sha256").update(buildAuthorizationEntryPreimage(entry, credentials.signatureExpirationLedger, passphrase).toXdr()).digest()
  return signatures.every((s) => ed25519Verifies(s.publicKey, payload, s.signature))
}
