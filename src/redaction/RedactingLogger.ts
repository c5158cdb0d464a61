import { Cause, Effect, FiberRef, HashSet, Layer, Logger } from "effect"
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

/** `base` with every message and cause redacted before it is written. */
export const redacting = <Out>(base: Logger.Logger<unknown, Out>, redactor: Redactor): Logger.Logger<unknown, Out> =>
  Logger.mapInputOptions(base, (options) => ({
    ...options,
    message: redactor.value(options.message),
    cause: redactCause(options.cause, redactor)
  }))

/**
 * Makes `base` (the pretty logger by default) behind the redactor the only logger: what a backend
 * echoed never reaches a log line, whichever code path logs it. It sets the whole set of loggers
 * rather than replacing the default one, so providing it twice (the process and a layer of it)
 * still writes each line once, and no logger added before it writes unredacted.
 */
export const RedactingLogger = (
  redactor: Redactor,
  base: Logger.Logger<unknown, unknown> = Logger.prettyLoggerDefault
): Layer.Layer<never> =>
  Layer.scopedDiscard(Effect.locallyScopedWith(FiberRef.currentLoggers, () => HashSet.make(redacting(base, redactor))))
