import { join } from "node:path"

/**
 * `sextant` as its own process, beside `runCli` (./cli.ts) which runs it in this process: kept apart
 * because a unit test may run the CLI in-process but starts no process.
 */

/** The `sextant` entry point a spawned CLI runs (`bun src/main.ts ...`, as the binary does). */
export const SEXTANT_MAIN = join(import.meta.dir, "..", "..", "src", "main.ts")

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
