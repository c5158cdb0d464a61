import { BunContext } from "@effect/platform-bun"
import { Console, Effect } from "effect"
import { cli } from "../src/cli/commands.js"
import { exitCodeOf, reportFailure } from "../src/cli/exit.js"
import { CliOutput } from "../src/cli/output.js"

/**
 * Runs `sextant ...argv` in this process through the one command definition, as main.ts does,
 * with the lines it prints captured (the commands' own and @effect/cli's help and errors).
 */
export const runCli = async (...argv: ReadonlyArray<string>) => {
  const out: Array<string> = []
  const err: Array<string> = []
  const line = (into: Array<string>) => (...args: ReadonlyArray<unknown>) => Effect.sync(() => void into.push(args.map(String).join(" ")))
  const console: Console.Console = { ...(await Effect.runPromise(Effect.console)), log: line(out), error: line(err) }
  const exit = await Effect.runPromiseExit(
    cli(["bun", "sextant", ...argv]).pipe(
      Effect.tapErrorCause(reportFailure),
      Effect.provideService(CliOutput, { out: (l) => void out.push(l), err: (l) => void err.push(l) }),
      Effect.withConsole(console),
      Effect.provide(BunContext.layer)
    )
  )
  return { code: exitCodeOf(exit), out, err }
}
