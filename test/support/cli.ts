import { BunContext } from "@effect/platform-bun"
import { Effect } from "effect"
import { cli } from "../../src/cli/commands.js"
import { exitCodeOf, reportFailure } from "../../src/cli/exit.js"
import { CliOutput, capturingConsole } from "../../src/cli/output.js"
import { removeEgressGuard } from "../../src/outbound/egress.js"
import { it } from "./effectTest.js"

/**
 * Runs `sextant ...argv` in this process through the one command definition, as main.ts does,
 * with the lines it prints captured (the commands' own and @effect/cli's help and errors). The
 * egress guard the command installs as it loads its config is removed afterwards: the test
 * files after this one share the process's `fetch`.
 */
export const runCli = async (...argv: ReadonlyArray<string>) => {
  const out: Array<string> = []
  const err: Array<string> = []
  const console = await it.run(capturingConsole(out, err))
  const exit = await it.run(
    cli(["bun", "sextant", ...argv]).pipe(
      Effect.tapErrorCause(reportFailure),
      Effect.provideService(CliOutput, { out: (l) => void out.push(l), err: (l) => void err.push(l) }),
      Effect.withConsole(console),
      Effect.provide(BunContext.layer),
      Effect.exit
    )
  )
  removeEgressGuard()
  return { code: exitCodeOf(exit), out, err }
}
