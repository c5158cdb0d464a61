import type { PaymentResponseContext, x402Client } from "@x402/core/client"
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from "@x402/core/types"
import type { OutcomeReport } from "../domain/outcomes.js"
import type { PreflightAnswer, PreflightPolicy } from "../domain/preflight.js"
import { PAYMENT_IDENTIFIER, withPaymentIdentifier } from "../extensions/paymentIdentifier.js"

/**
 * A guard for stock x402 clients: Sextant's preflight verdict asked before every payment a
 * `@x402/core` `x402Client` creates (and so `@x402/fetch`'s and `@x402/axios`'s), through the
 * client's own payment hooks. Plain promises and `fetch`: it pulls in neither Effect's runtime nor
 * any of Sextant's server.
 */
export interface SextantGuardOptions {
  /** Sextant's base URL, e.g. `http://127.0.0.1:4020`. */
  readonly service: string
  /** The buyer's policy, judged with the evidence (AgentPolicy plus `allowUnknownSellers`). */
  readonly policy?: PreflightPolicy
  /** Refuse on WARN too, not only on DENY. Default false. */
  readonly refuseOnWarn?: boolean
  /** How long preflight may take before Sextant counts as unreachable. Default 2,000 ms. */
  readonly timeoutMs?: number
  /** When Sextant cannot be reached (or answers anything but a verdict) within the bound: refuse (`closed`, the default) or pay unguarded (`open`). */
  readonly failMode?: "closed" | "open"
  /** Add a payment identifier when the seller's challenge offers the extension. Default true. */
  readonly paymentIdentifier?: boolean
  /** Sent as `Authorization: Bearer` when the deployment takes keys (preflight itself is open). */
  readonly apiKey?: string
  /** The fetch preflight goes through (default the global one). */
  readonly fetch?: typeof fetch
  /** Told every decision: the verdict, or why Sextant could not give one. */
  readonly onDecision?: (decision: GuardDecision) => void
  /**
   * After each paid request whose answer names a transaction, report the outcome to
   * `POST /v1/preflight/outcomes` (`settled` when the seller's settlement succeeded, `refused` when
   * it did not). Default false. The report never holds up or changes what the client returns.
   */
  readonly reportOutcomes?: boolean
  /** Told what became of each outcome report: Sextant's answer status, or why it was not sent. */
  readonly onOutcomeReported?: (
    report: OutcomeReport,
    result: { readonly status: number } | { readonly error: string }
  ) => void
}

export type GuardDecision =
  | {
      readonly _tag: "Verdict"
      readonly answer: PreflightAnswer
      readonly refused: boolean
      readonly requirements: PaymentRequirements
    }
  | {
      readonly _tag: "Unreachable"
      readonly reason: string
      readonly refused: boolean
      readonly requirements: PaymentRequirements
    }

const DEFAULT_TIMEOUT_MS = 2_000

/** The reasons as one line a client error can carry: `DENY: PAYEE_NOT_OBSERVED (probes of ... ); ...`. */
export const describeVerdict = (answer: PreflightAnswer): string =>
  `${answer.verdict}: ${answer.reasons
    .filter((r) => answer.verdict === "ALLOW" || r.severity === answer.verdict)
    .map((r) => `${r.code} (${r.message})`)
    .join("; ")}`

const isAnswer = (body: unknown): body is PreflightAnswer =>
  typeof body === "object" &&
  body !== null &&
  ["ALLOW", "WARN", "DENY"].includes((body as { verdict?: unknown }).verdict as string) &&
  Array.isArray((body as { reasons?: unknown }).reasons)

/** Asks preflight; a string is why no verdict came back within the bound. */
const askPreflight = async (
  options: SextantGuardOptions,
  paymentRequired: PaymentRequired,
  requirements: PaymentRequirements
): Promise<PreflightAnswer | string> => {
  const send = options.fetch ?? fetch
  const url = paymentRequired.resource?.url
  const body = {
    paymentRequired,
    requirements,
    ...(url === undefined ? {} : { url }),
    ...(options.policy === undefined ? {} : { policy: options.policy })
  }
  try {
    const response = await send(`${options.service.replace(/\/+$/, "")}/v1/preflight`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` })
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS)
    })
    const answer: unknown = await response.json().catch(() => null)
    if (response.status === 200 && isAnswer(answer)) return answer
    const message = typeof answer === "object" && answer !== null && "message" in answer ? String(answer.message) : ""
    return `Sextant answered ${response.status}${message === "" ? "" : `: ${message}`}`
  } catch (e) {
    const name = e instanceof Error ? e.name : ""
    return name === "TimeoutError" || name === "AbortError"
      ? `Sextant gave no verdict within ${options.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`
      : `Sextant could not be reached: ${e instanceof Error ? e.message : String(e)}`
  }
}

/**
 * Sends one outcome report to Sextant within `timeoutMs`: the answer's status, or why none came.
 * For a caller that knows more than the stock client's hook (that the body it got is what it paid
 * for: `delivered`, or that it is not: `not_delivered`).
 */
export const reportOutcome = async (
  options: SextantGuardOptions,
  report: OutcomeReport
): Promise<{ readonly status: number } | { readonly error: string }> => {
  const send = options.fetch ?? fetch
  try {
    const response = await send(`${options.service.replace(/\/+$/, "")}/v1/preflight/outcomes`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` })
      },
      body: JSON.stringify(report),
      signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS)
    })
    await response.body?.cancel()
    return { status: response.status }
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) }
  }
}

/** The report a stock client's paid request makes, from its settlement answer; null when it names no transaction or URL. */
export const outcomeOf = (context: PaymentResponseContext): OutcomeReport | null => {
  const settled = context.settleResponse
  const url = context.paymentPayload.resource?.url ?? context.paymentRequired?.resource?.url
  if (settled === undefined || settled.transaction === "" || url === undefined) return null
  return { url, outcome: settled.success ? "settled" : "refused", transactionHash: settled.transaction.toLowerCase() }
}

/**
 * Registers the guard on `client` (returned for chaining):
 * - before a payment is created, asks `POST /v1/preflight` with the challenge, the chosen option and
 *   the policy; refuses (the client throws "Payment creation aborted: ...", nothing is signed) on
 *   DENY, on WARN when `refuseOnWarn`, and when Sextant gives no verdict within `timeoutMs` unless
 *   `failMode` is `open`;
 * - when the challenge offers the `payment-identifier` extension, adds an identifier to the
 *   payment, so a retry of the same payment can be recognised by the seller's facilitator;
 * - with `reportOutcomes`, reports each paid request's settlement (with its transaction) back.
 */
export const guardClient = (client: x402Client, options: SextantGuardOptions): x402Client => {
  client.onBeforePaymentCreation(async ({ paymentRequired, selectedRequirements }) => {
    const answer = await askPreflight(options, paymentRequired, selectedRequirements)
    if (typeof answer === "string") {
      const refused = options.failMode !== "open"
      options.onDecision?.({ _tag: "Unreachable", reason: answer, refused, requirements: selectedRequirements })
      return refused ? { abort: true, reason: `Sextant guard (fail closed): ${answer}` } : undefined
    }
    const refused = answer.verdict === "DENY" || (answer.verdict === "WARN" && options.refuseOnWarn === true)
    options.onDecision?.({ _tag: "Verdict", answer, refused, requirements: selectedRequirements })
    return refused ? { abort: true, reason: `Sextant preflight ${describeVerdict(answer)}` } : undefined
  })
  if (options.reportOutcomes === true) {
    client.onPaymentResponse(async (context) => {
      const report = outcomeOf(context)
      // Not awaited: the buyer's answer never waits on Sextant, and a failed report changes nothing.
      if (report !== null)
        void reportOutcome(options, report).then((result) => options.onOutcomeReported?.(report, result))
    })
  }
  if (options.paymentIdentifier !== false) {
    client.registerExtension({
      key: PAYMENT_IDENTIFIER,
      // Only when the seller declared the extension; on a copy, since the client hands the
      // challenge's own extensions object in.
      enrichPaymentPayload: async (payload: PaymentPayload, paymentRequired: PaymentRequired) => {
        const added = withPaymentIdentifier(paymentRequired.extensions, payload.extensions)
        return added === null ? payload : { ...payload, extensions: added.extensions }
      }
    })
  }
  return client
}
