import { afterAll, describe, expect, test } from "bun:test"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { isLoopbackHost, openModeRefusal } from "../src/http/openMode.js"
import { pollUntil } from "./support/poll.js"
import { childEnv, freePorts, launchServe, serveArgv, serveUntilExit } from "./support/serveProcess.js"
import { NO_LEDGER } from "./support/server.js"

const dir = mkdtempSync(join(tmpdir(), "sextant-start-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A config with its store in the temporary folder, nothing else running beside the service. */
const writeConfig = (name: string, fields: Record<string, unknown>) => {
  const path = join(dir, `${name}.json`)
  writeFileSync(
    path,
    JSON.stringify({
      port: 0,
      database: join(dir, `${name}.db`),
      signer: { hmacSecret: "a-test-secret-of-16+" },
      vertical: { enabled: false },
      demo: { enabled: false },
      ...fields
    })
  )
  return path
}

describe("open mode stays on loopback (pure)", () => {
  test("loopback hosts", () => {
    for (const host of ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST"])
      expect(isLoopbackHost(host)).toBe(true)
    for (const host of ["0.0.0.0", "::", "", "10.0.0.1", "192.168.1.2", "example.com", "::ffff:10.0.0.1"])
      expect(isLoopbackHost(host)).toBe(false)
  })

  test("no keys and a non-loopback host is refused unless openMode says so", () => {
    const key = { principal: "a", sha256: "0".repeat(64) }
    expect(openModeRefusal({ host: "0.0.0.0", apiKeys: [], openMode: false })?.line).toStartWith("config error: host:")
    expect(openModeRefusal({ host: "0.0.0.0", apiKeys: [], openMode: true })).toBeUndefined()
    expect(openModeRefusal({ host: "0.0.0.0", apiKeys: [key], openMode: false })).toBeUndefined()
    expect(openModeRefusal({ host: "127.0.0.1", apiKeys: [], openMode: false })).toBeUndefined()
  })
})

describe("sextant serve, started as a process", () => {
  test("with no API keys, host 0.0.0.0 stops start-up with exit 2 and one line on stderr", async () => {
    const { code, stderr } = await serveUntilExit(writeConfig("open", { host: "0.0.0.0" }))
    expect(code).toBe(2)
    const lines = stderr.trim().split("\n")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toStartWith('config error: host: "0.0.0.0" is not loopback and no apiKeys are configured')
  }, 30_000)

  test("HOST=0.0.0.0 from the environment is refused the same way", async () => {
    const root = resolve(import.meta.dir, "..")
    const proc = Bun.spawn([process.execPath, "src/main.ts", "serve", "--config", writeConfig("env-host", {})], {
      cwd: root,
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, PORT: "0", HOST: "0.0.0.0" }
    })
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
    expect(code).toBe(2)
    expect(stderr.trim().split("\n")).toHaveLength(1)
  }, 30_000)

  test("`bun src/main.ts serve` (no runtime flags): openMode on 0.0.0.0 starts, and headers between 16 and 64 KiB get the JSON 431", async () => {
    const config = writeConfig("open-mode", { host: "0.0.0.0", openMode: true })
    const child = await launchServe([process.execPath, "src/main.ts", "serve", "--config", config], {
      logFile: join(dir, "open-mode.log"),
      cwd: resolve(import.meta.dir, "..")
    })
    try {
      const live = await pollUntil(
        "/health/live",
        () => fetch(`${child.url}/health/live`).catch(() => null),
        (r) => r?.status === 200,
        { timeoutMs: 15_000, everyMs: 50 }
      )
      expect(live?.status).toBe(200)
      const large = await fetch(`${child.url}/v1/resources?q=${"a".repeat(27_000)}`)
      expect(large.status).toBe(431)
      expect(large.headers.get("content-type")).toContain("application/json")
      expect(((await large.json()) as { error: string }).error).toBe("HEADERS_TOO_LARGE")
    } finally {
      await child.kill()
    }
  }, 30_000)
})

/** A line of the default `text` log format: `[HH:MM:SS.mmm] LEVEL (#fiber): message`. */
const LOG_LINE = /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) \(#\d+\): /

/**
 * `sextant serve` as `npm start` runs it, with the bundled defaults (demo catalog, vertical and
 * demo providers) moved onto free ports, its store and key in the temporary folder and the ledger
 * on a closed loopback port; `vertical` fields are merged in. Runs until the vertical has asked its
 * facilitator at least once, then gets SIGINT as on Ctrl-C: its exit code and each stream's lines.
 */
const startAndInterrupt = async (name: string, vertical: Record<string, unknown> = {}) => {
  const [port, verticalPort, fast, slow, flaky, raiser] = freePorts(6) as [
    number,
    number,
    number,
    number,
    number,
    number
  ]
  const path = join(dir, `${name}.json`)
  writeFileSync(
    path,
    JSON.stringify({
      port,
      database: join(dir, `${name}.db`),
      signer: { ed25519KeyFile: join(dir, `${name}.key`) },
      vertical: { port: verticalPort, horizonUrl: NO_LEDGER, sorobanRpcUrl: NO_LEDGER, ...vertical },
      ledger: { sorobanRpcUrl: NO_LEDGER, horizonUrl: NO_LEDGER },
      demo: { ports: { fast, slow, flaky, raiser } }
    })
  )
  const [stdoutFile, stderrFile] = [join(dir, `${name}.stdout`), join(dir, `${name}.stderr`)]
  const child = Bun.spawn(serveArgv(path), {
    cwd: resolve(import.meta.dir, ".."),
    env: childEnv(),
    stdout: Bun.file(stdoutFile),
    stderr: Bun.file(stderrFile)
  })
  try {
    const status = `http://127.0.0.1:${verticalPort}/stellar-intel/v1/status`
    await pollUntil(
      "the service listens and the demo providers serve",
      async () => readFileSync(stdoutFile, "utf8"),
      (out) => /Listening on/.test(out) && /demo: demo-fast/.test(out)
    )
    // Some traffic, as a first look at the demo makes: the catalog, an unpaid call to the vertical.
    expect((await fetch(`http://127.0.0.1:${port}/v1/resources`)).status).toBe(200)
    expect(
      (await fetch(`http://127.0.0.1:${verticalPort}/stellar-intel/v1/rwa/inspect`, { method: "POST", body: "{}" }))
        .status
    ).toBe(402)
    await pollUntil(
      "the vertical has asked its facilitator",
      async () => ((await (await fetch(status)).json()) as { payments: { detail: string } }).payments.detail,
      (detail) => !detail.startsWith("waiting for")
    )
  } finally {
    child.kill("SIGINT")
  }
  const code = await child.exited
  const lines = (file: string) =>
    readFileSync(file, "utf8")
      .split("\n")
      .filter((l) => l !== "")
  return { code, stdout: lines(stdoutFile), stderr: lines(stderrFile) }
}

describe("npm start, from start to Ctrl-C", () => {
  const expectOnlyLogLines = ({ code, stdout, stderr }: Awaited<ReturnType<typeof startAndInterrupt>>) => {
    expect(code).toBe(0)
    expect([...stdout, ...stderr].filter((line) => !LOG_LINE.test(line))).toEqual([])
    expect([...stdout, ...stderr].filter((line) => / (ERROR|FATAL) \(#/.test(line))).toEqual([])
    expect(stdout.some((line) => line.includes("shutting down: nothing left in flight"))).toBe(true)
  }

  test("with the bundled defaults every line on stdout and stderr is a structured log line, none at ERROR", async () => {
    expectOnlyLogLines(await startAndInterrupt("defaults"))
  }, 60_000)

  test("a vertical whose facilitator is down retries quietly: still only log lines", async () => {
    const [closed] = freePorts(1) as [number]
    const run = await startAndInterrupt("facilitator-down", { facilitatorUrl: `http://127.0.0.1:${closed}/x402` })
    expectOnlyLogLines(run)
  }, 60_000)
})
