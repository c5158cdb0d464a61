import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import type { Subprocess } from "bun"
import pkg from "../../package.json" with { type: "json" }
import { pollUntil } from "./poll.js"

const ROOT = resolve(import.meta.dir, "..", "..")

/**
 * `count` distinct loopback ports, free at the time of asking: all bound at once (so no two are
 * the same), then released. Nothing listens on them until someone binds them again, which
 * makes them good "unreachable" addresses. A process that must listen should bind port 0 itself
 * (`launchServe` reads back the port it got); a port from here is for an address some config must
 * name before that process starts, and may be taken by someone else in between.
 */
export const freePorts = (count: number): Array<number> => {
  const probes: Array<ReturnType<typeof Bun.serve>> = []
  while (probes.length < count) {
    // Below Linux's ephemeral range (32768-60999): a port handed out by `port: 0` and released is
    // soon reused by some outbound connection before the child binds it; these ports never are.
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    try {
      probes.push(Bun.serve({ hostname: "127.0.0.1", port, fetch: () => new Response() }))
    } catch {
      // Taken: draw another.
    }
  }
  const ports = probes.map((p) => p.port as number)
  for (const probe of probes) probe.stop(true)
  return ports
}

/** Variables that would override the config file (config.ts `loadConfig`); the child must not inherit them. */
const OVERRIDES = new Set(["PORT", "HOST", "DATABASE_URL", "SEXTANT_CONFIG"])

/** This process's environment without the variables that would override a child's config file. */
export const childEnv = (): Record<string, string | undefined> =>
  Object.fromEntries(Object.entries(process.env).filter(([name]) => !OVERRIDES.has(name)))

/**
 * What the service logs once it listens (`HttpServer.withLogAddress` in src/http/server.ts):
 * "Listening on http://<host>:<port>". The reference vertical beside it logs no such line.
 */
const LISTENING = /Listening on http:\/\/(\S+):(\d+)/

const WILDCARD_HOSTS = new Set(["0.0.0.0", "::", ""])

/** A base URL to reach a server that reported listening on `host`: a wildcard bind is reached on loopback. */
const urlFor = (host: string, port: number) => {
  const reachable = WILDCARD_HOSTS.has(host) ? "127.0.0.1" : host
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`
}

export interface ServeChild {
  readonly child: Subprocess
  /** The port the child reported listening on. */
  readonly port: number
  /** Its base URL, e.g. http://127.0.0.1:<port>. */
  readonly url: string
  /** Everything the child wrote so far, stdout and stderr interleaved. */
  readonly output: () => string
  /** SIGKILL, and resolves once the process is gone. */
  readonly kill: () => Promise<void>
}

/**
 * Starts `argv` (a command that runs the HTTP service, e.g. `serve`) and resolves with the port
 * it reports listening on, so the child can bind port 0 itself and nothing races for the port.
 * Output goes to `logFile`, so a chatty process never blocks on a full pipe; a process that exits
 * or never reports an address fails with that output.
 */
export const launchServe = async (
  argv: ReadonlyArray<string>,
  {
    logFile,
    cwd = ROOT,
    env = childEnv(),
    timeoutMs = 15_000
  }: {
    logFile: string
    cwd?: string
    env?: Record<string, string | undefined>
    timeoutMs?: number
  }
): Promise<ServeChild> => {
  // One descriptor in append mode for both streams, so their lines interleave instead of overwriting.
  const logFd = openSync(logFile, "a")
  const child = Bun.spawn([...argv], { cwd, env, stdout: logFd, stderr: logFd })
  closeSync(logFd)
  const output = () => readFileSync(logFile, "utf8")
  const kill = async () => {
    child.kill("SIGKILL")
    await child.exited
  }
  try {
    const [, host, port] = (await pollUntil(
      "the service logs the address it listens on",
      async () => {
        const found = LISTENING.exec(output())
        if (found === null && child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`)
        return found
      },
      (found) => found !== null,
      { timeoutMs, everyMs: 20 }
    )) as RegExpExecArray
    return { child, port: Number(port), url: urlFor(host!, Number(port)), output, kill }
  } catch (e) {
    const text = output()
    await kill()
    throw new Error(`${(e as Error).message}\n--- serve output ---\n${text}`)
  }
}

/** `sextant serve --config <file>` as `npm start` runs it, with any runtime flags of the `start` script. */
export const serveArgv = (configFile: string): Array<string> => {
  const script = pkg.scripts.start.split(" ")
  if (script[0] !== "bun" || !script.includes("src/main.ts"))
    throw new Error(`unexpected start script: ${pkg.scripts.start}`)
  return [process.execPath, ...script.slice(1), "--config", configFile]
}

export interface ServeProcess {
  /** The service's base URL, http://127.0.0.1:<port>. */
  readonly url: string
  /** The port it listens on: the one its config named, or the one it got for port 0. */
  readonly port: number
  /** The folder holding config.json, the store, the signer key and the process log. */
  readonly dir: string
  /** Kills the process and removes its folder. */
  readonly stop: () => Promise<void>
}

/**
 * `sextant serve --config <dir>/config.json` as its own process, as `npm start` runs it, in a
 * fresh temporary folder: `configIn(dir)` gives the config (store and key paths go inside `dir`),
 * and `files` are written beside it first (a relative `catalog` path resolves against the config's
 * folder). Without a `port` in the config the child binds port 0 and the port it reports is used;
 * a config that names one gets exactly that port or fails. Resolves once `/health/live` answers 200.
 */
export const spawnServe = async (
  configIn: (dir: string) => Record<string, unknown> & { port?: number },
  files: Record<string, string> = {},
  { timeoutMs }: { readonly timeoutMs?: number } = {}
): Promise<ServeProcess> => {
  const dir = mkdtempSync(join(tmpdir(), "sextant-serve-"))
  const config = { port: 0, ...configIn(dir) }
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  const configFile = join(dir, "config.json")
  writeFileSync(configFile, JSON.stringify(config, null, 2))
  let launched: ServeChild
  try {
    launched = await launchServe(serveArgv(configFile), {
      logFile: join(dir, "serve.log"),
      ...(timeoutMs !== undefined ? { timeoutMs } : {})
    })
  } catch (e) {
    rmSync(dir, { recursive: true, force: true })
    throw e
  }
  const { url, port, output, kill } = launched
  const stop = async () => {
    await kill()
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    if (config.port !== 0 && port !== config.port)
      throw new Error(`the service listens on ${port}, not on the configured ${config.port}`)
    await pollUntil(
      "the service answers /health/live",
      async () => (await fetch(`${url}/health/live`).catch(() => null))?.status ?? null,
      (status) => status === 200,
      { timeoutMs: 15_000, everyMs: 20 }
    )
  } catch (e) {
    const text = output()
    await stop()
    throw new Error(`${(e as Error).message}\n--- serve output ---\n${text}`)
  }
  return { url, port, dir, stop }
}

/** `sextant serve --config <file>` run until it exits by itself (a start-up that must fail): its exit code and stderr. */
export const serveUntilExit = async (configFile: string) => {
  const proc = Bun.spawn([process.execPath, "src/main.ts", "serve", "--config", configFile], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, PORT: "0" }
  })
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
  return { code, stderr }
}
