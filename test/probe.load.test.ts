import { afterAll, beforeAll, expect } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Fiber, Option, Schedule } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { ObservationsRepo } from "../src/store/ObservationsRepo.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { Prober } from "../src/verification/Prober.js"
import { entry, verificationConfig, verificationStack } from "./fixtures/verificationStack.js"
import { startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"

let fixture: X402Fixture
beforeAll(async () => {
  fixture = await startX402Fixture()
})
afterAll(() => fixture.stop())

const ENDPOINTS = 200
const CONCURRENCY = 16
const TIMEOUT_MS = 500

it.live(
  "200 endpoints at concurrency 16, 20 of them hanging: the cycle ends within the timeout bound and reads stay served",
  () =>
    Effect.gen(function* () {
      const config = verificationConfig({
        trustedOrigins: [fixture.origin],
        concurrency: CONCURRENCY,
        timeoutMs: TIMEOUT_MS
      })
      // Every tenth endpoint hangs, so hanging probes are spread through the whole cycle.
      const entries = Array.from({ length: ENDPOINTS }, (_, i) =>
        entry(`e${String(i).padStart(3, "0")}`, fixture.url(i % 10 === 9 ? `/hang/${i}` : `/paid/${i}`))
      )
      const out = yield* Effect.gen(function* () {
        yield* (yield* CatalogWritesRepo).upsertCatalog(entries)
        const sql = yield* SqlClient.SqlClient
        const started = performance.now()
        const cycle = yield* Effect.fork((yield* Prober).runCycle)
        // Wait (polling the store) until most answers are in while hanging probes still hold slots.
        const recorded = sql<{ n: number }>`SELECT COUNT(*) AS n FROM observations`.pipe(
          Effect.map((r) => Number(r[0]?.n))
        )
        yield* Effect.repeat(recorded, { until: (n) => n >= 120, schedule: Schedule.spaced(Duration.millis(5)) })
        const reader = yield* EvidenceReader
        const evidence = yield* reader.forResource(ResourceId.make("e000"))
        const page = yield* (yield* ObservationsRepo).page(ResourceId.make("e000"), 5, null)
        const stillRunning = Option.isNone(yield* Fiber.poll(cycle))
        const report = yield* Fiber.join(cycle)
        const elapsedMs = performance.now() - started
        const outcomes = yield* sql<{ outcome: string; n: number }>`
        SELECT outcome, COUNT(*) AS n FROM observations GROUP BY outcome ORDER BY outcome`
        return { evidence, page, stillRunning, report, elapsedMs, outcomes }
      }).pipe(Effect.provide(verificationStack(config)))
      // The reads were answered while the cycle was still waiting on hanging targets.
      expect(out.stillRunning).toBe(true)
      expect(out.evidence.status).toBe("PAYMENT_VERIFIED")
      expect(out.page.observations).toHaveLength(1)
      expect(out.report).toMatchObject({ probed: ENDPOINTS, healthy: 180, unrecorded: 0 })
      expect(out.outcomes.map((o) => [o.outcome, Number(o.n)])).toEqual([
        ["healthy", 180],
        ["timeout", 20]
      ])
      // Hanging probes cost at most two waves of the timeout (20 hangs over 16 slots); serial
      // timeouts would take 20 x 500 ms. The slack covers the 180 real answers and a slow machine.
      const waves = Math.ceil(20 / CONCURRENCY)
      expect(out.elapsedMs).toBeLessThan((waves + 1) * TIMEOUT_MS + 2500)
    })
)

it.live(
  "a target never sees more than probes.concurrency probes at once, while other claimed probes wait for their batch",
  () =>
    Effect.gen(function* () {
      // The fixture's real challenge, answered after 20 ms by a server that counts requests in flight.
      const challenge = yield* Effect.promise(async () => {
        const sample = await fetch(fixture.url("/paid/0"))
        await sample.body?.cancel()
        return sample.headers.get("payment-required")!
      })
      let inFlight = 0
      let most = 0
      const slow = yield* Effect.acquireRelease(
        Effect.sync(() =>
          Bun.serve({
            hostname: "127.0.0.1",
            port: 0,
            fetch: async () => {
              most = Math.max(most, ++inFlight)
              await Bun.sleep(20)
              inFlight--
              return new Response("{}", {
                status: 402,
                headers: { "content-type": "application/json", "PAYMENT-REQUIRED": challenge }
              })
            }
          })
        ),
        (server) => Effect.sync(() => server.stop(true))
      )
      const origin = `http://127.0.0.1:${slow.port}`
      const config = verificationConfig({ trustedOrigins: [origin], concurrency: 3 })
      const entries = Array.from({ length: 40 }, (_, i) =>
        entry(`s${String(i).padStart(2, "0")}`, `${origin}/paid/${i}`)
      )
      const out = yield* Effect.gen(function* () {
        yield* (yield* CatalogWritesRepo).upsertCatalog(entries)
        const prober = yield* Prober
        yield* prober.syncSchedule
        const claimed: Array<number> = []
        for (let n = yield* prober.runDue("test", 12); ; n = yield* prober.runDue("test", 12)) {
          claimed.push(n)
          if (n === 0) break
        }
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ n: number }>`SELECT COUNT(DISTINCT resource_id) AS n FROM observations`
        return { claimed, probed: Number(rows[0]?.n) }
      }).pipe(Effect.provide(verificationStack(config)))
      expect(out.claimed).toEqual([12, 12, 12, 4, 0])
      expect(out.probed).toBe(40)
      expect(most).toBe(3)
    })
)
