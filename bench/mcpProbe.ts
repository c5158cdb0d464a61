/**
 * MCP probe throughput, `bun bench/mcpProbe.ts` (about 15 s).
 *
 * Full catalog cycles through Prober.runCycle on SQLite files, in the same run and at the same
 * concurrency, over two catalogs of ENDPOINTS resources each:
 *   http: paid routes of the local x402 fixture server (a request and a 402 per probe);
 *   mcp:  tools of one local MCP server (the official SDK over Streamable HTTP), every probe an
 *         unpaid `tools/call` in the one session the probes share (its `initialize` counted).
 * Both serve challenges made by @x402/core + @x402/stellar. Rounds alternate so load from other
 * processes hits both alike; medians are printed with the ratio mcp / http.
 */
import { Effect, ManagedRuntime } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { CatalogEntry } from "../src/domain/resources.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { Prober } from "../src/verification/Prober.js"
import { startMcpSeller } from "../test/fixtures/mcpSeller.js"
import { entry, verificationConfig, verificationStack } from "../test/fixtures/verificationStack.js"
import { startX402Fixture } from "../test/fixtures/x402Resource.js"
import { throughput } from "./support/throughput.js"

const ENDPOINTS = 200
const CONCURRENCY = 16
const ROUNDS = 3
const ROUND_MS = 2000

const fixture = await startX402Fixture()
const challenge = await fetch(fixture.url("/paid"))
const paymentRequired = JSON.parse(Buffer.from(challenge.headers.get("payment-required")!, "base64").toString("utf8"))
const seller = startMcpSeller({ paymentRequired, extension: true })

const httpEntries = Array.from({ length: ENDPOINTS }, (_, i) => entry(`http-${i}`, fixture.url(`/paid/${i}`)))
const mcpEntries = Array.from({ length: ENDPOINTS }, (_, i): CatalogEntry => {
  const base = entry(`mcp-${i}`, seller.url)
  return { ...base, resource: { ...base.resource, type: "mcp", method: "POST", mcp: { kind: "tool", toolName: "paid", transport: "streamable-http" } } }
})

const stack = async (entries: ReadonlyArray<CatalogEntry>) => {
  const config = {
    ...verificationConfig({ trustedOrigins: [fixture.origin, new URL(seller.url).origin], concurrency: CONCURRENCY }),
    database: join(mkdtempSync(join(tmpdir(), "sextant-bench-mcp-")), "sextant.db")
  }
  const runtime = ManagedRuntime.make(verificationStack(config))
  await runtime.runPromise(Effect.flatMap(CatalogWritesRepo, (repo) => repo.upsertCatalog(entries)))
  const cycle = () =>
    runtime.runPromise(
      Effect.flatMap(Prober, (p) => p.runCycle).pipe(
        Effect.tap((report) => (report.healthy === ENDPOINTS ? Effect.void : Effect.die(new Error(`${report.healthy} of ${ENDPOINTS} healthy`))))
      )
    )
  return { runtime, cycle }
}

const http = await stack(httpEntries)
const mcp = await stack(mcpEntries)
// Warm-up: JIT, connections, prepared statements, the MCP session.
await http.cycle()
await mcp.cycle()

const httpRates: Array<number> = []
const mcpRates: Array<number> = []
for (let round = 0; round < ROUNDS; round++) {
  httpRates.push(await throughput(ROUND_MS, ENDPOINTS, http.cycle))
  mcpRates.push(await throughput(ROUND_MS, ENDPOINTS, mcp.cycle))
}
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const h = median(httpRates)
const m = median(mcpRates)
console.log(`resources ${ENDPOINTS} per catalog, concurrency ${CONCURRENCY}, ${ROUNDS} rounds of ${ROUND_MS} ms each`)
console.log(`http probes: ${h.toFixed(0)} probes/s`)
console.log(`mcp probes:  ${m.toFixed(0)} probes/s (one server, ${seller.initializes()} initialize for ${seller.calls.length} tools/call)`)
console.log(`ratio mcp / http: ${(m / h).toFixed(2)}`)

await http.runtime.dispose()
await mcp.runtime.dispose()
seller.stop()
await fixture.stop()
