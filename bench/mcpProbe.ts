/**
 * MCP probe throughput, `bun bench/mcpProbe.ts` (about 15 s).
 *
 * Full catalog cycles through Prober.runCycle on SQLite files, in the same run and at the same
 * concurrency, over three catalogs of ENDPOINTS resources each:
 *   http:       paid routes of the local x402 fixture server (a request and a 402 per probe);
 *   mcp 2025:   tools of one local 2025-11-25 MCP server (the official 1.x SDK, sessions): every
 *               probe a `server/discover` refused once, then unpaid `tools/call`s in the one
 *               session the probes share (its `initialize` counted);
 *   mcp 2026:   tools of one local 2026-07-28 MCP server (the official v2 SDK's handler,
 *               stateless): every probe a `server/discover` and an unpaid `tools/call`, no session.
 * All serve challenges made by @x402/core + @x402/stellar. Rounds alternate so load from other
 * processes hits all alike; medians are printed with the ratios mcp / http.
 */

import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, ManagedRuntime } from "effect"
import type { CatalogEntry } from "../src/domain/resources.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { Prober } from "../src/verification/Prober.js"
import { startFacilitator } from "../test/fixtures/facilitator.js"
import { QUOTE, startModernSeller } from "../test/fixtures/mcpGenerations.js"
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
// Probes never pay: the facilitator only answers the modern seller's `/supported`.
const facilitator = startFacilitator()
const modern = await startModernSeller(facilitator.url)

const httpEntries = Array.from({ length: ENDPOINTS }, (_, i) => entry(`http-${i}`, fixture.url(`/paid/${i}`)))
const mcpEntries = Array.from({ length: ENDPOINTS }, (_, i): CatalogEntry => {
  const base = entry(`mcp-${i}`, seller.url)
  return {
    ...base,
    resource: {
      ...base.resource,
      type: "mcp",
      method: "POST",
      mcp: { kind: "tool", toolName: "paid", transport: "streamable-http" }
    }
  }
})

const modernEntries = Array.from({ length: ENDPOINTS }, (_, i): CatalogEntry => {
  const base = entry(`mcp2026-${i}`, modern.url)
  return {
    ...base,
    resource: {
      ...base.resource,
      type: "mcp",
      method: "POST",
      mcp: { kind: "tool", toolName: QUOTE.tool, transport: "streamable-http" }
    }
  }
})

const stack = async (entries: ReadonlyArray<CatalogEntry>) => {
  const config = {
    ...verificationConfig({
      trustedOrigins: [fixture.origin, new URL(seller.url).origin, new URL(modern.url).origin],
      concurrency: CONCURRENCY
    }),
    database: join(mkdtempSync(join(tmpdir(), "sextant-bench-mcp-")), "sextant.db")
  }
  const runtime = ManagedRuntime.make(verificationStack(config))
  await runtime.runPromise(Effect.flatMap(CatalogWritesRepo, (repo) => repo.upsertCatalog(entries)))
  const cycle = () =>
    runtime.runPromise(
      Effect.flatMap(Prober, (p) => p.runCycle).pipe(
        Effect.tap((report) =>
          report.healthy === ENDPOINTS
            ? Effect.void
            : Effect.die(new Error(`${report.healthy} of ${ENDPOINTS} healthy`))
        )
      )
    )
  return { runtime, cycle }
}

const http = await stack(httpEntries)
const mcp = await stack(mcpEntries)
const mcp2026 = await stack(modernEntries)
// Warm-up: JIT, connections, prepared statements, the MCP session.
await http.cycle()
await mcp.cycle()
await mcp2026.cycle()

const httpRates: Array<number> = []
const mcpRates: Array<number> = []
const modernRates: Array<number> = []
for (let round = 0; round < ROUNDS; round++) {
  httpRates.push(await throughput(ROUND_MS, ENDPOINTS, http.cycle))
  mcpRates.push(await throughput(ROUND_MS, ENDPOINTS, mcp.cycle))
  modernRates.push(await throughput(ROUND_MS, ENDPOINTS, mcp2026.cycle))
}
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const h = median(httpRates)
const m = median(mcpRates)
const n = median(modernRates)
console.log(`resources ${ENDPOINTS} per catalog, concurrency ${CONCURRENCY}, ${ROUNDS} rounds of ${ROUND_MS} ms each`)
console.log(`http probes:     ${h.toFixed(0)} probes/s`)
console.log(
  `mcp 2025 probes: ${m.toFixed(0)} probes/s (one server, ${seller.initializes()} initialize for ${seller.calls.length} tools/call)`
)
console.log(
  `mcp 2026 probes: ${n.toFixed(0)} probes/s (one server, ${modern.counts.initializes} initialize, ${modern.counts.sessionRequests} requests with a session)`
)
console.log(`ratio mcp 2025 / http: ${(m / h).toFixed(2)}`)
console.log(`ratio mcp 2026 / http: ${(n / h).toFixed(2)}`)

await http.runtime.dispose()
await mcp.runtime.dispose()
await mcp2026.runtime.dispose()
seller.stop()
await modern.stop()
await facilitator.stop()
await fixture.stop()
