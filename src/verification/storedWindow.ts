import type { Context } from "effect"
import { Effect } from "effect"
import type { VerificationConfig } from "../config.js"
import type { ResourceRecord } from "../domain/resources.js"
import type { ObservationsRepo } from "../store/ObservationsRepo.js"
import { decodeWindow, windowOf, windowStartMs } from "./rollingWindow.js"

/**
 * A resource's rolling window from its stored text (`resource_metrics.window_state`); a row from
 * before rolling windows existed (or none) is rebuilt from the raw observations still kept, as of
 * `nowMs`. The recorder reads windows this way before each write, history before each read, so
 * both see the same hours.
 */
export const storedWindow =
  (observations: Context.Tag.Service<ObservationsRepo>, config: VerificationConfig) =>
  (record: ResourceRecord, stored: string | null | undefined, nowMs: number) => {
    const decoded = decodeWindow(stored ?? null)
    return decoded !== null
      ? Effect.succeed(decoded)
      : Effect.map(observations.window(record.resource.id, windowStartMs(nowMs, config)), (raw) =>
          windowOf(raw, record.paymentOptions, config)
        )
  }
