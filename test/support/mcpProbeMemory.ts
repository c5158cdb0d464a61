/**
 * Probes 2,000 MCP servers of one generation once each, 50 at a time, through one session cache,
 * and prints what it cost as JSON: run as its own process (`bun test/support/mcpProbeMemory.ts
 * legacy|modern`), so the RSS it reports is this work's alone, not what earlier test files left in
 * a shared test process. Loopback only: the servers are one storm fixture.
 */
import { Effect } from "effect"
import { ResourceId } from "../../src/domain/ids.js"
import { observeMcp } from "../../src/verification/mcpProbe.js"
import { mcpSessions } from "../../src/verification/mcpSessions.js"
import { startMcpStorm } from "../fixtures/mcpStorm.js"
import { testConfig } from "./server.js"

const generation = process.argv[2] === "modern" ? "modern" : "plain"
const base = testConfig()
const config = testConfig({ probes: { ...base.probes, allowPrivateTargets: true, timeoutMs: 3000 } })
const server = startMcpStorm({ pings: 0 })
const sessions = mcpSessions(config)
const urls = Array.from({ length: 2000 }, (_, i) => server.url(`/${generation}/${i}`))
const target = (url: string) => ({
  resourceId: ResourceId.make("mcp.storm"),
  url,
  method: "POST" as const,
  advertised: [],
  mcp: { kind: "tool" as const, toolName: "storm", transport: "streamable-http" as const }
})

Bun.gc(true)
const rssBefore = process.memoryUsage().rss
const heapBefore = process.memoryUsage().heapUsed
let maxSessions = 0
let executed = 0
for (let i = 0; i < urls.length; i += 50) {
  const outcomes = await Promise.all(
    urls.slice(i, i + 50).map((url) => Effect.runPromise(observeMcp(target(url), config, sessions)))
  )
  executed += outcomes.filter((o) => o.observation.outcome === "executed_unpaid").length
  maxSessions = Math.max(maxSessions, sessions.size())
}
Bun.gc(true)
const mb = (bytes: number) => bytes / 1024 / 1024
console.log(
  JSON.stringify({
    executed,
    maxSessions,
    requests: server.requests(),
    calls: server.calls(),
    rssGrownMb: mb(process.memoryUsage().rss - rssBefore),
    heapGrownMb: mb(process.memoryUsage().heapUsed - heapBefore)
  })
)
await sessions.closeAll()
server.stop()
process.exit(0)
