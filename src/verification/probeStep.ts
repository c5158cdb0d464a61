import { Effect } from "effect"
import type { Config } from "../config.js"
import type { ResourceRecord } from "../domain/resources.js"
import { redactorFor } from "../redaction/redact.js"
import { observeMcp } from "./mcpProbe.js"
import { mcpSessions } from "./mcpSessions.js"
import { type Observed, observe, type ProbeTarget } from "./observe.js"

/**
 * A probe's own step, nothing stored: the request under the outbound guard and `observe`'s reading
 * of the answer. Every probe is stored as an observation already; spans per request and per query
 * on top of it cost a large share of a probe's time (docs/performance.md) and tell nothing more.
 * What a target said (details, challenge text) is redacted before it is stored or answered, as
 * every outside text is.
 */
export const probeStep = (config: Config) => {
  const redactor = redactorFor(config)
  const sessions = mcpSessions(config)
  return (target: ProbeTarget) =>
    (target.mcp === undefined
      ? observe(target, config)
      : observeMcp({ ...target, mcp: target.mcp }, config, sessions)
    ).pipe(
      Effect.map(
        (observed): Observed => ({
          ...observed,
          observation: redactor.value(observed.observation),
          challenge: redactor.value(observed.challenge)
        })
      ),
      Effect.withTracerEnabled(false)
    )
}

/** A catalog resource is always probed with its catalog method: a caller never picks it (docs/trust.md). */
export const targetOf = (record: ResourceRecord): ProbeTarget => ({
  resourceId: record.resource.id,
  url: record.resource.url,
  method: record.resource.method,
  advertised: record.paymentOptions,
  mcp: record.resource.mcp
})
