import { Cause, Layer, Logger } from "effect"
import type { Redactor } from "./redact.js"

/** Every failure and defect of a cause passed through the redactor, the cause's structure kept. */
export const redactCause = <E>(cause: Cause.Cause<E>, redactor: Redactor): Cause.Cause<E> =>
  Cause.match(cause, {
    onEmpty: Cause.empty as Cause.Cause<E>,
    onFail: (error) => Cause.fail(redactor.value(error)),
    onDie: (defect) => Cause.die(redactor.value(defect)),
    onInterrupt: (fiberId) => Cause.interrupt(fiberId),
    onSequential: (left, right) => Cause.sequential(left, right),
    onParallel: (left, right) => Cause.parallel(left, right)
  })

/** `base` with every message, annotation and cause redacted before it is written. */
export const redacting = <Out>(base: Logger.Logger<unknown, Out>, redactor: Redactor): Logger.Logger<unknown, Out> =>
  Logger.mapInputOptions(base, (options) => ({
    ...options,
    message: redactor.value(options.message),
    cause: redactCause(options.cause, redactor)
  }))

/**
 * Replaces the default logger with `base` (the pretty one by default) behind the redactor: what a
 * backend echoed never reaches a log line, whichever code path logs it.
 */
export const RedactingLogger = (redactor: Redactor, base: Logger.Logger<unknown, unknown> = Logger.prettyLoggerDefault) =>
  Logger.replace(Logger.defaultLogger, redacting(base, redactor)) as Layer.Layer<never>
