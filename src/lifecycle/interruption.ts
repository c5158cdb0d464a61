import { Cause, Effect } from "effect"

/**
 * Logs a cause caught by a catch-all (a request handler, a loop's pass) at ERROR, unless it holds
 * only interruptions: those are the process stopping (a layer closing under work in flight on
 * Ctrl-C), not a failure, and are logged at DEBUG, so a normal stop prints no error.
 */
export const logFailure = (message: string) => (cause: Cause.Cause<unknown>) =>
  Cause.isInterruptedOnly(cause)
    ? Effect.logDebug(`${message}: interrupted while stopping`)
    : Effect.logError(message, cause)
