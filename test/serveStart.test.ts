import { afterAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { isLoopbackHost, openModeRefusal } from "../src/http/openMode.js"
import { pollUntil } from "./support/poll.js"
import { launchServe, serveUntilExit } from "./support/serveProcess.js"

const dir = mkdtempSync(join(tmpdir(), "sextant-start-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A config with its store in the temporary folder, nothing else running beside the service. */
const writeConfig = (name: string, fields: Record<string, unknown>) => {
  const path = join(dir, `${name}.json`)
  writeFileSync(
    path,
    JSON.stringify({ port: 0, database: join(dir, `${name}.db`), signer: { hmacSecret: "a-test-secret-of-16+" }, vertical: { enabled: false }, demo: { enabled: false }, ...fields })
  )
  return path
}

describe("open mode stays on loopback (pure)", () => {
  test("loopback hosts", () => {
    for (const host of ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST"]) expect(isLoopbackHost(host)).toBe(true)
    for (const host of ["0.0.0.0", "::", "", "10.0.0.1", "192.168.1.2", "example.com", "::ffff:10.0.0.1"]) expect(isLoopbackHost(host)).toBe(false)
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
    const child = await launchServe([process.execPath, "src/main.ts", "serve", "--config", config], { logFile: join(dir, "open-mode.log"), cwd: resolve(import.meta.dir, "..") })
    try {
      const live = await pollUntil("/health/live", () => fetch(`${child.url}/health/live`).catch(() => null), (r) => r?.status === 200, { timeoutMs: 15_000, everyMs: 50 })
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
