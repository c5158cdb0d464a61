import { x402Client, x402HTTPClient } from "@x402/core/client"
import { type PaymentRequired, parsePaymentRequired } from "@x402/core/schemas"
import { Schema } from "effect"
import type { ProbeOutcome } from "../domain/observations.js"
import { BaseUnits, PaymentScheme } from "../domain/stellar.js"

/** One payment option of a challenge, v1 and v2 brought to the same shape. */
export interface ChallengeOption {
  readonly x402Version: number
  readonly scheme: string
  readonly network: string
  readonly asset: string
  readonly payTo: string
  readonly amount: string
  /** For `upto` the scheme's amount is the ceiling the buyer authorises; null for fixed prices. */
  readonly maxAmount: string | null
}

export type ChallengeReading =
  | { readonly _tag: "NoChallenge" }
  | { readonly _tag: "Malformed"; readonly reason: string }
  | { readonly _tag: "Decoded"; readonly challenge: PaymentRequired; readonly options: ReadonlyArray<ChallengeOption> }

/** What this deployment can pay: its network, its asset contract and a scheme it knows. */
export interface Deployment {
  readonly network: string
  readonly assetContract: string
}

// The stock client reads v2 from the PAYMENT-REQUIRED header and v1 from the body; it needs no
// scheme registrations for that, only for paying.
const reader = new x402HTTPClient(new x402Client())

const optionsOf = (challenge: PaymentRequired): ReadonlyArray<ChallengeOption> =>
  challenge.x402Version === 1
    ? challenge.accepts.map((a) => ({
        x402Version: 1,
        scheme: a.scheme,
        network: a.network,
        asset: a.asset,
        payTo: a.payTo,
        amount: a.maxAmountRequired,
        maxAmount: a.scheme === "upto" ? a.maxAmountRequired : null
      }))
    : challenge.accepts.map((a) => ({
        x402Version: 2,
        scheme: a.scheme,
        network: a.network,
        asset: a.asset,
        payTo: a.payTo,
        amount: a.amount,
        maxAmount: a.scheme === "upto" ? a.amount : null
      }))

const claimsX402 = (header: string | null | undefined, body: unknown) =>
  (header !== null && header !== undefined && header !== "") ||
  (typeof body === "object" && body !== null && "x402Version" in body)

/** Payment options one challenge may carry: every one is judged and stored, and sellers offer a few. */
export const MAX_CHALLENGE_OPTIONS = 32
/** The default bound on the `PAYMENT-REQUIRED` header, the probes' default body cap. */
export const MAX_CHALLENGE_HEADER_BYTES = 65_536

/**
 * Reads a 402 answer: the v2 header first, else a v1 JSON body, validated against the x402
 * schemas. Something that claims to be a challenge but does not decode is Malformed; a 402
 * without any sign of x402 is NoChallenge. Bounded as a body is (the server's header limit is
 * far larger): a header over `maxHeaderBytes`, or more than MAX_CHALLENGE_OPTIONS options, is
 * Malformed and not decoded or stored.
 */
export const readChallenge = (
  getHeader: (name: string) => string | null | undefined,
  body: unknown,
  maxHeaderBytes: number = MAX_CHALLENGE_HEADER_BYTES
): ChallengeReading => {
  const header = getHeader("PAYMENT-REQUIRED")
  if (header !== null && header !== undefined && header.length > maxHeaderBytes) {
    return {
      _tag: "Malformed",
      reason: `the PAYMENT-REQUIRED header of ${header.length} bytes is over the ${maxHeaderBytes}-byte bound`
    }
  }
  let raw: unknown
  try {
    raw = reader.getPaymentRequiredResponse(getHeader, body)
  } catch (e) {
    return claimsX402(header, body)
      ? { _tag: "Malformed", reason: `challenge does not decode: ${(e as Error).message}` }
      : { _tag: "NoChallenge" }
  }
  return decodeChallenge(raw)
}

/** A challenge already out of its transport (a decoded PaymentRequired object), checked against the x402 schemas. */
export const decodeChallenge = (raw: unknown): ChallengeReading => {
  const parsed = parsePaymentRequired(raw)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : ""
    return { _tag: "Malformed", reason: `challenge fails the x402 schema: ${where}${issue?.message ?? "invalid"}` }
  }
  if (parsed.data.accepts.length > MAX_CHALLENGE_OPTIONS) {
    return {
      _tag: "Malformed",
      reason: `the challenge offers ${parsed.data.accepts.length} payment options, over the ${MAX_CHALLENGE_OPTIONS} read`
    }
  }
  return { _tag: "Decoded", challenge: parsed.data, options: optionsOf(parsed.data) }
}

const knownScheme = Schema.is(PaymentScheme)
const isBaseUnits = Schema.is(BaseUnits)

export const isAcceptable = (option: ChallengeOption, deployment: Deployment): boolean =>
  option.network === deployment.network &&
  option.asset === deployment.assetContract &&
  knownScheme(option.scheme) &&
  isBaseUnits(option.amount)

/** Rule 2 of the spec: healthy only for a 402 with a decodable challenge and an acceptable option. */
export const classify = (httpStatus: number, reading: ChallengeReading, deployment: Deployment): ProbeOutcome => {
  if (httpStatus !== 402) return "http_status"
  switch (reading._tag) {
    case "NoChallenge":
      return "no_challenge"
    case "Malformed":
      return "malformed_challenge"
    case "Decoded":
      return reading.options.some((o) => isAcceptable(o, deployment)) ? "healthy" : "no_acceptable_option"
  }
}
