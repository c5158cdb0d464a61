import { join } from "node:path"
import { BunContext } from "@effect/platform-bun"
import { Effect } from "effect"
import { cli } from "../../src/cli/commands.js"
import { exitCodeOf, reportFailure } from "../../src/cli/exit.js"
import { CliOutput, capturingConsole } from "../../src/cli/output.js"
import { removeEgressGuard } from "../../src/outbound/egress.js"
import { it } from "./effectTest.js"

/** The `sextant` entry point a spawned CLI runs (`bun src/main.ts ...`, as the binary does). */
export const SEXTANT_MAIN = join(import.meta.dir, "..", "..", "src", "main.ts")

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

export interface SpawnedCliOptions {
  /** The working folder of each run (where relative paths such as `./data` land). */
  readonly cwd: string
  /** A config file passed as `--config` after the arguments; none: the CLI's own lookup. */
  readonly configFile?: string
  /** Every run's stdout and stderr are appended here, for a check over all that the CLI printed. */
  readonly record?: Array<string>
}

/** What a spawned run printed and how it exited. */
export interface CliRun {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * A runner of `sextant ...args` as its own process, the way a user starts it (`SEXTANT_CONFIG`
 * cleared, so only the given config counts). Asynchronous: the service and the resources the
 * command calls usually live in the test's process, whose event loop must keep answering meanwhile.
 */
export const spawnedCli =
  (options: SpawnedCliOptions) =>
  async (...args: ReadonlyArray<string>): Promise<CliRun> => {
    const config = options.configFile === undefined ? [] : ["--config", options.configFile]
    const child = Bun.spawn([process.execPath, SEXTANT_MAIN, ...args, ...config], {
      cwd: options.cwd,
      env: { ...process.env, SEXTANT_CONFIG: "" },
      stdout: "pipe",
      stderr: "pipe"
    })
    const [stdout, stderr, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited
    ])
    options.record?.push(stdout, stderr)
    return { code, stdout, stderr }
  }

/** The JSON line `sextant buy` prints first on stderr: its summary (or its refusal). */
export const buySummary = (run: CliRun) => JSON.parse(run.stderr.trim().split("\n")[0] ?? "{}")
