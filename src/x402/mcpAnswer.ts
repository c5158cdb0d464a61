import { isObject } from "../domain/isObject.js"
import { type ChallengeReading, readChallenge } from "./challenge.js"

/**
 * The x402 MCP transport (x402 `specs/transports-v2/mcp.md`), read without I/O: which binding a
 * tool call's answer speaks and the PaymentRequired it carries.
 */

/** The MCP extension of the extension binding, advertised in the client's capabilities. */
export const X402_MCP_EXTENSION = "org.x402/payment"
/** Where a paid retry carries its PaymentPayload: `params._meta[...]`. */
export const PAYMENT_META = "x402/payment"
/** Where the seller's SettlementResponse comes back: `result._meta[...]`. */
export const PAYMENT_RESPONSE_META = "x402/payment-response"

/** `tool-result`: an `isError` result holding the PaymentRequired; `extension`: `resultType: "payment_required"`. */
export type McpBinding = "tool-result" | "extension"

export type ToolAnswer =
  | { readonly _tag: "PaymentRequired"; readonly binding: McpBinding; readonly paymentRequired: unknown }
  /** A result that is not an error: the tool ran and no payment was asked. */
  | { readonly _tag: "Executed" }
  /** An error result with no PaymentRequired in it. */
  | { readonly _tag: "NoChallenge"; readonly reason: string }

const claimsX402 = (value: unknown) => isObject(value) && "x402Version" in value

const firstText = (result: Record<string, unknown>): string | undefined => {
  const first = Array.isArray(result.content) ? result.content[0] : undefined
  return isObject(first) && first.type === "text" && typeof first.text === "string" ? first.text : undefined
}

const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * Which binding a `tools/call` result speaks: the extension's `resultType: "payment_required"`
 * with `paymentRequired`, else an `isError` result whose `structuredContent` (or, JSON-encoded,
 * `content[0].text`) claims x402. An error result with no such object answers no challenge; a
 * result that is not an error ran the tool unpaid.
 */
export const readToolAnswer = (result: unknown): ToolAnswer => {
  const answer = isObject(result) ? result : {}
  if (answer.resultType === "payment_required") {
    return { _tag: "PaymentRequired", binding: "extension", paymentRequired: answer.paymentRequired }
  }
  if (answer.isError !== true) return { _tag: "Executed" }
  if (claimsX402(answer.structuredContent))
    return { _tag: "PaymentRequired", binding: "tool-result", paymentRequired: answer.structuredContent }
  const text = firstText(answer)
  const fromText = text === undefined ? undefined : parsed(text)
  if (claimsX402(fromText)) return { _tag: "PaymentRequired", binding: "tool-result", paymentRequired: fromText }
  return {
    _tag: "NoChallenge",
    reason: `the tool answered an error without a PaymentRequired${text === undefined ? "" : `: ${text.slice(0, 200)}`}`
  }
}

/**
 * An MCP answer's PaymentRequired as an HTTP 402 would carry it, for the decoder of HTTP
 * challenges: a v2 object as the `PAYMENT-REQUIRED` header (base64 of its JSON), a v1 object as
 * the body.
 */
export const asHttpChallenge = (paymentRequired: unknown) => {
  const v1 = isObject(paymentRequired) && paymentRequired.x402Version === 1
  const header = v1 ? undefined : Buffer.from(JSON.stringify(paymentRequired ?? null), "utf8").toString("base64")
  return {
    header: (name: string) => (name.toUpperCase() === "PAYMENT-REQUIRED" ? header : undefined),
    body: v1 ? paymentRequired : undefined
  }
}

/** The PaymentRequired of an MCP answer, read by the decoder of HTTP challenges. */
export const mcpChallenge = (paymentRequired: unknown): ChallengeReading => {
  const { header, body } = asHttpChallenge(paymentRequired)
  return readChallenge(header, body)
}
