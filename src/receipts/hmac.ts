import { createHmac, timingSafeEqual } from "node:crypto"

export const hmacSha256 = (secret: string, message: Uint8Array): Uint8Array =>
  new Uint8Array(createHmac("sha256", secret).update(message).digest())

export const hmacMatches = (secret: string, message: Uint8Array, mac: Uint8Array): boolean => {
  const expected = hmacSha256(secret, message)
  return mac.length === expected.length && timingSafeEqual(expected, mac)
}

const SIGNER_ID_LABEL = new TextEncoder().encode("sextant receipt signer id")

/**
 * What an HMAC receipt's `serviceSigner` holds: `hmac-sha256:` and 16 hex digits of a MAC of a
 * fixed label. It tells which secret signed (so a rotated secret is reported as such) and reveals
 * nothing a receipt's own MAC does not already.
 */
export const hmacSignerId = (secret: string): string =>
  `hmac-sha256:${Buffer.from(hmacSha256(secret, SIGNER_ID_LABEL)).toString("hex").slice(0, 16)}`
