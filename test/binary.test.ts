import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import pkg from "../package.json" with { type: "json" }
import { TOOL_NAMES } from "./support/mcpTools.js"
import { pollUntil } from "./support/poll.js"
import { freePorts, launchServe, type ServeChild } from "./support/serveProcess.js"

/**
 * The single binary: built with `bun build --compile` (what `npm run build` runs) and started in an
 * empty folder, far from node_modules, so migrations, the demo catalog and every dependency must
 * be inside it.
 */
const root = resolve(import.meta.dir, "..")
const buildDir = mkdtempSync(join(tmpdir(), "sextant-build-"))
const binary = join(buildDir, "sextant")
const workDir = mkdtempSync(join(tmpdir(), "sextant-empty-"))

let server: ServeChild | undefined

beforeAll(async () => {
  // Exactly what `npm run build` runs (its runtime flags included), with the output redirected.
  const script = pkg.scripts.build.split(" ")
  if (script[0] !== "bun" || script.at(-2) !== "--outfile")
    throw new Error(`unexpected build script: ${pkg.scripts.build}`)
  const build = Bun.spawn([process.execPath, ...script.slice(1, -1), binary], {
    cwd: root,
    stdout: "ignore",
    stderr: "pipe"
  })
  if ((await build.exited) !== 0) throw new Error(await new Response(build.stderr).text())
})

afterAll(() => {
  server?.child.kill()
})

describe("single binary", () => {
  test("serves /health/live and /openapi.json from an empty folder, creating its store there, and verifies its receipts", async () => {
    expect(readdirSync(workDir)).toEqual([])
    // Only the vertical's and the demo providers' ports are moved off their defaults (another test
    // or process may hold 4021-4025); everything else is the embedded defaults, with the store
    // created in the empty folder. Those ports are chosen ahead because the demo catalog's URLs
    // name them; the service binds PORT=0 and reports its port. (The vertical's payments would go
    // to the service's /x402 at the configured port, 0 here; with no facilitator configured they
    // are never ready either way.)
    const configDir = mkdtempSync(join(tmpdir(), "sextant-binary-config-"))
    const [vertical, fast, slow, flaky, raiser] = freePorts(5)
    writeFileSync(
      join(configDir, "config.json"),
      JSON.stringify({ vertical: { port: vertical }, demo: { ports: { fast, slow, flaky, raiser } } })
    )
    // The log goes beside the config, so the empty folder gets only what the binary creates.
    server = await launchServe([binary, "serve", "--config", join(configDir, "config.json")], {
      cwd: workDir,
      env: { PATH: process.env.PATH ?? "", PORT: "0" },
      logFile: join(configDir, "serve.log")
    })
    const port = server.port
    const live = await pollUntil(
      "the binary answers /health/live",
      () => fetch(`http://127.0.0.1:${port}/health/live`).catch(() => undefined),
      (response) => response !== undefined,
      { timeoutMs: 10_000, everyMs: 50 }
    )
    expect(live?.status).toBe(200)
    expect(await live!.json()).toEqual({ status: "ok" })
    const openapi = (await (await fetch(`http://127.0.0.1:${port}/openapi.json`)).json()) as any
    expect(openapi.info.version).toBe("0.1.0")
    // The status page and /metrics are served from inside the binary too (stylesheet, renderers, prom-client).
    for (const path of ["/status", "/status/style.css", "/metrics"])
      expect((await fetch(`http://127.0.0.1:${port}${path}`)).status).toBe(200)
    const resources = (await (await fetch(`http://127.0.0.1:${port}/v1/resources`)).json()) as any
    expect(resources.resources.length).toBeGreaterThan(0)
    expect(readdirSync(join(workDir, "data"))).toContain("sextant.db")

    // The bundled vertical is probed at start; once it is verified a purchase can be receipted,
    // and the binary's own `receipt verify` checks that receipt offline.
    const status = await pollUntil(
      "the bundled vertical is probed PAYMENT_VERIFIED",
      async () =>
        ((await (await fetch(`http://127.0.0.1:${port}/v1/resources/stellar-intel.rwa.inspect`)).json()) as any)
          .resource.status,
      (found) => found === "PAYMENT_VERIFIED",
      { timeoutMs: 10_000, everyMs: 50 }
    )
    const verified = status === "PAYMENT_VERIFIED"
    expect(verified).toBe(true)
    const created = await fetch(`http://127.0.0.1:${port}/v1/receipts`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        request: { capability: "rwa.inspect" },
        // Named, since the demo providers beside it compete for the route.
        resourceId: "stellar-intel.rwa.inspect",
        payment: {
          network: "stellar:testnet",
          scheme: "exact",
          asset: "CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA",
          amount: "10000"
        },
        response: { status: 200, body: "{}" }
      })
    })
    expect(created.status).toBe(200)
    const receipt = (await created.json()) as any
    const receiptFile = join(configDir, "receipt.json")
    writeFileSync(receiptFile, JSON.stringify(receipt))
    const verify = (file: string) =>
      Bun.spawn([binary, "receipt", "verify", file], { cwd: workDir, stdout: "pipe", stderr: "ignore" })
    const valid = verify(receiptFile)
    expect(await valid.exited).toBe(0)
    expect(JSON.parse(await new Response(valid.stdout).text())).toMatchObject({ valid: true, algorithm: "ed25519" })
    writeFileSync(receiptFile, JSON.stringify({ ...receipt, payment: { ...receipt.payment, amount: "1" } }))
    expect(await verify(receiptFile).exited).toBe(1)

    server.child.kill()
    await server.child.exited
  })

  test("lists the MCP tools through the binary", async () => {
    const client = new Client({ name: "binary-test", version: "1.0.0" })
    await client.connect(
      new StdioClientTransport({
        command: binary,
        args: ["mcp"],
        cwd: workDir,
        env: { PATH: process.env.PATH ?? "", PORT: "0" },
        stderr: "ignore"
      })
    )
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES)
    await client.close()
  })
})
