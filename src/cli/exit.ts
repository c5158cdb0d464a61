import { HelpDoc, ValidationError } from "@effect/cli"
import { Cause, Console, Data, Effect, Exit, Option } from "effect"
import type { ConfigError } from "../config.js"
import { isTaggedAs } from "../domain/tagged.js"

/**
 * A command that ends with a code other than 0. `message` goes to stderr; without one the command
 * has already said why (a JSON line, a log line).
 */
export class CliExit extends Data.TaggedError("CliExit")<{ readonly code: number; readonly message?: string }> {}

/** Exit codes shared by every command; `buy` adds its own 3-9 (client/cli.ts). */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const

/** A command's own numeric answer as the program's outcome: 0 succeeds, anything else is a `CliExit`. */
export const exitWith = (code: number): Effect.Effect<void, CliExit> =>
  code === EXIT.ok ? Effect.void : Effect.fail(new CliExit({ code }))

const codeOfFailure = (failure: unknown): number => {
  if (isTaggedAs<CliExit>(failure, "CliExit")) return failure.code
  if (isTaggedAs<ConfigError>(failure, "ConfigError") || ValidationError.isValidationError(failure)) return EXIT.usage
  return EXIT.failed
}

/**
 * The one mapping from how the program ended to the process's exit code. An interruption is the
 * answer to SIGTERM / SIGINT: a clean stop.
 */
export const exitCodeOf = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)) return EXIT.ok
  return Option.match(Cause.failureOption(exit.cause), { onNone: () => EXIT.failed, onSome: codeOfFailure })
}

/** One line for a bad command line, in the shape every command's own usage errors use. */
const usageLine = (error: ValidationError.ValidationError) =>
  JSON.stringify({ error: "USAGE", message: HelpDoc.toAnsiText(error.error).trim() })

/**
 * Says why the program failed, on stderr: a config error's one line, a `CliExit`'s message, a
 * bad command line as `{error: "USAGE", message}` (after @effect/cli's own text), anything
 * unexpected in full.
 */
export const reportFailure = (cause: Cause.Cause<unknown>): Effect.Effect<void> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.void
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) return Console.error(Cause.pretty(cause))
  const e = failure.value
  if (isTaggedAs<ConfigError>(e, "ConfigError")) return Console.error(e.line)
  // An Error's message is "" when none was given.
  if (isTaggedAs<CliExit>(e, "CliExit")) return e.message === "" ? Effect.void : Console.error(e.message)
  if (ValidationError.isValidationError(e)) return Console.error(usageLine(e))
  return Console.error(Cause.pretty(cause))
}

/**
 * Sets the code and lets the process end by itself once stdout and stderr have drained into
 * their pipes (`process.exit` could cut them short). The runtime still exits at once after a
 * signal.
 */
export const teardown = (exit: Exit.Exit<unknown, unknown>, onExit: (code: number) => void) => {
  const code = exitCodeOf(exit)
  process.exitCode = code
  onExit(EXIT.ok)
}

/**
 * Ends the process now, skipping finalizers: only for a shutdown cut short (a second signal, or
 * the grace ran out), which leaves the journal as a crash would for the next start to recover.
 */
export const forceExit = (): never => process.exit(EXIT.failed)
