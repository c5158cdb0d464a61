import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

const ROOT = resolve(import.meta.dir, "..", "..")

/**
 * `count` distinct loopback ports, free at the time of asking: all bound on port 0 at once (so no
 * two are the same), then released. Nothing listens on them until someone binds them again.
 */
export const freePorts = (count: number): Array<number> => {
  const probes = Array.from({ length: count }, () => Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() }))
  const ports = probes.map((p) => p.port as number)
  for (const probe of probes) probe.stop(true)
  return ports
}

/**
 * Reads until `check` holds, every `everyMs`, for at most `timeoutMs`; then fails naming `what`
 * and the last value read, so a timeout says how far the system got.
 */
export const pollUntil = async <A>(
  what: string,
  read: () => Promise<A>,
  check: (value: A) => boolean,
  { timeoutMs = 20_000, everyMs = 100 }: { timeoutMs?: number; everyMs?: number } = {}
): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  let last: A | undefined
  for (;;) {
    last = await read()
    if (check(last)) return last
    if (Date.now() >= deadline) throw new Error(`${what}: not reached within ${timeoutMs} ms; last seen ${JSON.stringify(last)}`)
    await Bun.sleep(everyMs)
  }
}

/** Variables that would override the config file (config.ts `loadConfig`); the child must not inherit them. */
const OVERRIDES = new Set(["PORT", "HOST", "DATABASE_URL", "SEXTANT_CONFIG"])

export interface ServeProcess {
  /** The service's base URL, http://127.0.0.1:<port>. */
  readonly url: string
  /** The folder holding config.json, the store, the signer key and the process log. */
  readonly dir: string
  /** Kills the process and removes its folder. */
  readonly stop: () => Promise<void>
}

/**
 * `sextant serve --config <dir>/config.json` as its own process, as `npm start` runs it, in a
 * fresh temporary folder: `configIn(dir)` gives the config (store and key paths go inside `dir`),
 * and `files` are written beside it first (a relative `catalog` path resolves against the config's
 * folder). Resolves once `/health/live` answers 200. Output goes to a log file, so a chatty
 * process never blocks on a full pipe; a process that never comes up fails with that output.
 */
export const spawnServe = async (
  configIn: (dir: string) => Record<string, unknown> & { port: number },
  files: Record<string, string> = {}
): Promise<ServeProcess> => {
  const dir = mkdtempSync(join(tmpdir(), "sextant-serve-"))
  const config = configIn(dir)
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  const configFile = join(dir, "config.json")
  writeFileSync(configFile, JSON.stringify(config, null, 2))
  const logFile = join(dir, "serve.log")
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !OVERRIDES.has(name)))
  // One descriptor in append mode for both streams, so their lines interleave instead of overwriting.
  const logFd = openSync(logFile, "a")
  const child = Bun.spawn([process.execPath, "src/main.ts", "serve", "--config", configFile], {
    cwd: ROOT,
    env,
    stdout: logFd,
    stderr: logFd
  })
  closeSync(logFd)
  const log = () => readFileSync(logFile, "utf8")
  const url = `http://127.0.0.1:${config.port}`
  const stop = async () => {
    child.kill("SIGKILL")
    await child.exited
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await pollUntil(
      "the service answers /health/live",
      async () => {
        if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`)
        return (await fetch(`${url}/health/live`).catch(() => null))?.status ?? null
      },
      (status) => status === 200,
      { timeoutMs: 15_000, everyMs: 50 }
    )
  } catch (e) {
    const output = log()
    await stop()
    throw new Error(`${(e as Error).message}\n--- serve output ---\n${output}`)
  }
  return { url, dir, stop }
}
