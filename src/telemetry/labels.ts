import { Cause, Clock, Effect, Exit, Option } from "effect"
import { statusOfError } from "../domain/apiError.js"
import { isPendingAnswer } from "../domain/settlements.js"
import type { SettleResult } from "./Instruments.js"

/** A stable error code, or OTHER: a label must never carry free text from a request or a backend. */
const boundedCode = (code: unknown): string =>
  typeof code === "string" && /^[A-Z][A-Z0-9_]{0,63}$/.test(code) ? code : "OTHER"

/**
 * How a settle ended, as `result` and `code` labels: settled (OK), declined by the facilitator
 * (DECLINED: its errorReason is the backend's free text, so it is not a label), pending (a
 * backend's `settlement_pending` answer: broadcast, not yet confirmed), refused by this
 * service (a 4xx code: POLICY_DENIED, FEE_BUDGET_EXHAUSTED, ...) or an error (5xx, a defect).
 */
export const settleLabels = (
  exit: Exit.Exit<
    { readonly success: boolean; readonly errorReason?: string | undefined; readonly transaction: string },
    unknown
  >
): { result: SettleResult; code: string } => {
  if (Exit.isSuccess(exit)) {
    if (exit.value.success) return { result: "settled", code: "OK" }
    return isPendingAnswer(exit.value)
      ? { result: "pending", code: "SETTLEMENT_PENDING" }
      : { result: "declined", code: "DECLINED" }
  }
  const failure = Cause.failureOption(exit.cause)
  if (Option.isNone(failure)) return { result: "error", code: "INTERNAL" }
  const error = failure.value
  const code = boundedCode((error as { error?: unknown } | null)?.error)
  return { result: statusOfError(error) < 500 ? "refused" : "error", code }
}

/** Runs `effect` and hands its exit and duration in seconds to `record`, whatever the outcome. */
export const measured = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  record: (exit: Exit.Exit<A, E>, seconds: number) => Effect.Effect<void>
): Effect.Effect<A, E, R> =>
  Effect.flatMap(Clock.currentTimeMillis, (start) =>
    Effect.onExit(effect, (exit) =>
      Effect.flatMap(Clock.currentTimeMillis, (end) => record(exit, (end - start) / 1000))
    )
  )

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
/** Request methods as a label: the standard ones, everything else OTHER. */
export const methodLabel = (method: string) => (METHODS.has(method) ? method : "OTHER")

/**
 * Matches a request path against route templates (`/v1/resources/:id`), so HTTP metrics and span
 * names carry the template, never the id in the path. Unknown paths share one label.
 */
export const routeMatcher = (templates: ReadonlyArray<string>) => {
  const compiled = templates.map((template) => ({
    template,
    pattern: new RegExp(
      `^${template
        .split("/")
        .map((part) =>
          part.startsWith(":") ? "[^/]+" : part === "*" ? ".*" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
        )
        .join("/")}/?$`
    ),
    // Literal segments first: /status/style.css before /status/:anything.
    params: template.split("/").filter((p) => p.startsWith(":") || p === "*").length
  }))
  compiled.sort((a, b) => a.params - b.params)
  return (path: string): string => compiled.find((c) => c.pattern.test(path))?.template ?? "unmatched"
}
