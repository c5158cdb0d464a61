import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Exit, Layer, Scope } from "effect"
import { admit, quotaKeys, quotaRefusal } from "../src/catalog/ingestionQuota.js"
import { PrincipalId, ResourceId } from "../src/domain/ids.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { Prober } from "../src/verification/Prober.js"
import { ProbeSchedulerLive } from "../src/verification/ProbeScheduler.js"
import { backoffIntervals } from "../src/verification/probeSlots.js"
import { entry, verificationConfig, verificationStack } from "./fixtures/verificationStack.js"
import { startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"

/**
 * A catalog anyone could flood, on the rules before the trust model: registered, imported and
 * bazaar targets were probed forever in one lane with the catalog file's, so thousands of
 * blackholed targets starved the prober until config resources went stale and settles failed
 * VERIFICATION_TOO_OLD.
 */
let fixture: X402Fixture
beforeAll(async () => {
  fixture = await startX402Fixture()
})
afterAll(() => fixture.stop())

const INTERVAL_SECONDS = 2
const STRANGERS = 5_000

describe("a bounded probe workload", () => {
  it.live(
    `${STRANGERS} blackholed stranger targets leave config resources probed on time`,
    () => {
      const base = verificationConfig({
        trustedOrigins: [fixture.origin],
        intervalSeconds: INTERVAL_SECONDS,
        timeoutMs: 300,
        concurrency: 2,
        leaseSeconds: 5
      })
      const config = { ...base, ingestion: { ...base.ingestion, concurrency: 2 } }
      return Effect.gen(function* () {
        // The config entries sort after every stranger's id: one lane in due order would reach them last.
        yield* Effect.gen(function* () {
          const repo = yield* CatalogWritesRepo
          yield* repo.upsertCatalog([
            entry("zz-config-1", fixture.url("/paid/c1")),
            entry("zz-config-2", fixture.url("/paid/c2"))
          ])
          const flood = Array.from({ length: STRANGERS }, (_, i) =>
            entry(`flood-${String(i).padStart(5, "0")}`, fixture.url(`/hang/${i}`))
          )
          yield* repo.upsertImported(flood, "import:flood", { actor: "import:flood", reason: "a stranger's flood" })
        })
        const started = Date.now()
        const scope = yield* Effect.tap(Scope.make(), (scope) => Layer.buildWithScope(ProbeSchedulerLive, scope))
        yield* Effect.sleep(INTERVAL_SECONDS * 1000 * 2.5)
        yield* Scope.close(scope, Exit.void)
        const elapsedMs = Date.now() - started
        const seen = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql<{
              resource_id: string
              n: unknown
              newest: unknown
            }>`SELECT resource_id, COUNT(*) AS n, MAX(observed_at_ms) AS newest
          FROM observations WHERE resource_id LIKE 'zz-config-%' GROUP BY resource_id ORDER BY resource_id`
        )
        const strangersProbed = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM observations WHERE resource_id LIKE 'flood-%'`
        )
        // Each config entry: probed at once, then once per interval, however many strangers wait.
        expect(seen.map((s) => s.resource_id)).toEqual(["zz-config-1", "zz-config-2"])
        for (const s of seen) {
          expect(Number(s.n)).toBeGreaterThanOrEqual(2)
          expect(started + elapsedMs - Number(s.newest)).toBeLessThan(INTERVAL_SECONDS * 1000 * 1.5)
        }
        // The strangers' lane went on at its own pace: a few timeouts, not the whole flood.
        expect(Number(strangersProbed[0]?.n)).toBeLessThan(100)
      }).pipe(Effect.provide(verificationStack(config)))
    },
    60_000
  )

  it.live(
    "an unhealthy untrusted entry backs off, then is retired with its observations; trusted and operator-quarantined ones stay",
    () => {
      const interval = 60_000
      expect(
        [undefined, 0, 59_999, 60_000, 180_000, 3_600_000 * 24].map((ago) =>
          backoffIntervals(ago === undefined ? undefined : 10_000_000 - ago, 10_000_000, interval, 64)
        )
      ).toEqual([1, 1, 1, 2, 8, 64])
      const config = verificationConfig({ trustedOrigins: [fixture.origin], timeoutMs: 200 })
      return Effect.gen(function* () {
        const repo = yield* CatalogWritesRepo
        const sql = yield* SqlClient.SqlClient
        yield* repo.upsertCatalog([entry("trusted-dead", fixture.url("/hang/t"))])
        yield* repo.upsertImported(
          ["open-dead", "open-held", "open-fresh"].map((id) => entry(id, fixture.url(`/hang/${id}`))),
          "import:x",
          { actor: "import:x", reason: "test" }
        )
        for (const id of ["trusted-dead", "open-dead", "open-held", "open-fresh"])
          yield* (yield* Prober).probeResource(ResourceId.make(id)).pipe(Effect.ignore)
        const longAgo = Date.now() - (config.ingestion.retireAfterHours + 1) * 3_600_000
        yield* sql`UPDATE resources SET unhealthy_since_ms = ${longAgo} WHERE id IN ('trusted-dead', 'open-dead', 'open-held')`
        yield* sql`UPDATE resources SET quarantined_by = 'ops' WHERE id = 'open-held'`
        const report = yield* (yield* Prober).prune
        const left = yield* sql<{ id: string }>`SELECT id FROM resources ORDER BY id`
        const observations = yield* sql<{
          n: unknown
        }>`SELECT COUNT(*) AS n FROM observations WHERE resource_id = 'open-dead'`
        expect({
          retired: report.retired,
          left: left.map((r) => r.id),
          observations: Number(observations[0]?.n)
        }).toEqual({
          retired: 1,
          left: ["open-fresh", "open-held", "trusted-dead"],
          observations: 0
        })
      }).pipe(Effect.provide(verificationStack(config)))
    },
    30_000
  )

  test("ingestion quotas per source, origin, principal and payee, counted as a batch is admitted", () => {
    const limits = { maxPerSource: 10, maxPerOrigin: 2, maxPerPrincipal: 3, maxPerPayee: 4 }
    const at = (path: string, payTo?: string) => {
      const e = entry(path, `http://${path}/x`)
      return payTo === undefined ? e : { ...e, paymentOptions: e.paymentOptions.map((o) => ({ ...o, payTo })) }
    }
    const empty = { source: 0, origins: new Map(), principals: new Map(), payees: new Map() }
    const items = ["a.example", "a.example", "a.example", "b.example", "c.example"].map((host, i) => ({
      item: `${host}#${i}`,
      keys: quotaKeys(at(host), PrincipalId.make("mallory"))
    }))
    const { admitted, refused } = admit(items, empty, limits, "registration")
    expect(admitted).toEqual(["a.example#0", "a.example#1", "b.example#3"])
    expect(refused.map((r) => r.reason)).toEqual([
      "origin http://a.example holds its quota of 2 entries",
      'principal "mallory" added its quota of 3 entries'
    ])
    expect(quotaRefusal(quotaKeys(at("d.example"), null), { ...empty, source: 10 }, limits, "import:x")).toBe(
      "source import:x holds its quota of 10 entries"
    )
    const payTo = at("e.example").paymentOptions[0]!.payTo
    expect(
      quotaRefusal(quotaKeys(at("e.example"), null), { ...empty, payees: new Map([[payTo, 4]]) }, limits, "bazaar")
    ).toBe(`payee ${payTo} is named by its quota of 4 entries`)
  })
})
