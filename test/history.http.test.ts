/**
 * `GET /v1/resources/{id}/history` over real HTTP on loopback: observations of past hours are
 * recorded through the real recorder (which closes hours into rollups), and every hour answered is
 * compared with a count made here from the same observations: closed hours from the rollups table,
 * an hour older than the metric window, and the open hour from the rolling window. Then spans and
 * refusals: 400 {error, message} for a bad span or date, 404 for an unknown resource.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Option } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import type { RecordedObservation } from "../src/domain/observations.js"
import { ObservationsRepo } from "../src/store/ObservationsRepo.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"
import { advertised, answeredWithout, observation, timedOut } from "./fixtures/observations.js"
import { entry } from "./fixtures/verificationStack.js"
import { runScoped } from "./support/effectTest.js"
import { referenceHour } from "./support/referenceWindow.js"
import { request, startServer, testConfig } from "./support/server.js"

const HOUR = 3_600_000
const DAY = 24 * HOUR
const ID = ResourceId.make("hist.paid")
const URL = "http://127.0.0.1:9/hist"

const now = Date.now()
const currentHour = Math.floor(now / HOUR) * HOUR
/** Minutes into the hour `hoursAgo` before the current one, never later than now. */
const at = (hoursAgo: number, minute: number) => Math.min(currentHour - hoursAgo * HOUR + minute * 60_000, now)

const of = (o: RecordedObservation) => ({ ...o, resourceId: ID, url: URL })
/** Taken in time order: three days ago (outside the 24 h metric window), then each of the last five hours and the current one. */
const OBSERVATIONS: ReadonlyArray<RecordedObservation> = [
  observation(at(72, 5), { latencyMs: 80 }),
  timedOut(at(72, 25)),
  observation(at(72, 45), { latencyMs: 300 }),
  observation(at(5, 1), { latencyMs: 40 }),
  observation(at(5, 2), { latencyMs: 60 }),
  answeredWithout(at(5, 3), 500, { latencyMs: 20 }),
  observation(at(5, 4), { outcome: "refused_target", httpStatus: null, latencyMs: null }),
  timedOut(at(4, 10)),
  timedOut(at(4, 11), { outcome: "unreachable" }),
  observation(at(3, 0), { latencyMs: 1500 }),
  observation(at(3, 30), { latencyMs: 900, amount: "20000", priceUsd: 0.002 }),
  answeredWithout(at(3, 59), 402, { latencyMs: 70 }),
  observation(at(1, 15), { latencyMs: 110 }),
  observation(at(0, 0), { latencyMs: 50 }),
  answeredWithout(at(0, 0), 404, { latencyMs: 10 })
].map(of)

/** The hours the service must answer for these observations, counted directly, refused targets excluded. */
const reference = (fromMs: number, toMs: number) => {
  const byHour = new Map<number, Array<RecordedObservation>>()
  for (const o of OBSERVATIONS) {
    const h = Math.floor(Date.parse(o.observedAt) / HOUR) * HOUR
    if (o.outcome === "refused_target" || h < fromMs || h >= toMs) continue
    byHour.set(h, [...(byHour.get(h) ?? []), o])
  }
  return [...byHour.entries()].sort(([a], [b]) => a - b).map(([h, inHour]) => referenceHour(h, inHour, [advertised]))
}

type Hour = ReturnType<typeof reference>[number]

/** Equal to the reference: counts and ratios exactly, percentiles within the sketch's bound (exact below 128 ms). */
const expectHours = (got: ReadonlyArray<Hour>, expected: ReadonlyArray<Hour>) => {
  const counts = ({ p50LatencyMs: _a, p95LatencyMs: _b, ...rest }: Hour) => rest
  expect(got.map(counts)).toEqual(expected.map(counts))
  got.forEach((hour, i) => {
    for (const key of ["p50LatencyMs", "p95LatencyMs"] as const) {
      const exact = expected[i]![key]
      if (exact === null) expect(hour[key]).toBeNull()
      else expect(Math.abs(hour[key]! - exact)).toBeLessThanOrEqual(exact < 128 ? 0 : exact / 128)
    }
  })
}

const folder = mkdtempSync(join(tmpdir(), "sextant-history-http-"))
let server: Awaited<ReturnType<typeof startServer>>
beforeAll(async () => {
  server = await startServer(
    testConfig({
      catalog: [entry(ID, URL), entry("hist.quiet", "http://127.0.0.1:9/quiet")],
      signer: { ed25519KeyFile: join(folder, "signer.key") }
    })
  )
  await runScoped(
    server.runtime,
    Effect.gen(function* () {
      const record = Option.getOrThrow(yield* Effect.flatMap(ResourceReadsRepo, (repo) => repo.get(ID)))
      const recorder = yield* EvidenceRecorder
      for (const o of OBSERVATIONS) yield* recorder.recordObservation(record, o)
    })
  )
})
afterAll(async () => {
  await server.close()
  rmSync(folder, { recursive: true, force: true })
})

const history = (query = "", id: string = ID) => request(`${server.url}/v1/resources/${id}/history${query}`)
const iso = (ms: number) => new Date(ms).toISOString()

describe("GET /v1/resources/{id}/history", () => {
  test("the last 24 h by default: each hour with probes once, oldest first, counted as the observations say, the open hour included", async () => {
    const { status, body } = await history()
    expect(status).toBe(200)
    expect(body.resourceId).toBe(ID)
    const expected = reference(now - DAY, now + 1)
    expect(expected.map((h) => h.startAt)).toEqual([5, 4, 3, 1, 0].map((h) => iso(currentHour - h * HOUR)))
    expectHours(body.hours, expected)
    // The open hour has no rollup yet: it came from the rolling window; the closed ones from the rollups table.
    const stored = await runScoped(
      server.runtime,
      Effect.flatMap(ObservationsRepo, (repo) => repo.rollups(ID, now - 4 * DAY, now + HOUR))
    )
    expect(stored.map((r) => iso(r.startMs))).toEqual([72, 5, 4, 3, 1].map((h) => iso(currentHour - h * HOUR)))
    expect(body.hours[body.hours.length - 1].startAt).toBe(iso(currentHour))
  })

  test("an hour older than the metric window is served from its rollup", async () => {
    const { status, body } = await history(`?from=${iso(currentHour - 80 * HOUR)}&to=${iso(currentHour - 60 * HOUR)}`)
    expect(status).toBe(200)
    expect(body.hours).toHaveLength(1)
    expectHours(body.hours, reference(currentHour - 80 * HOUR, currentHour - 60 * HOUR))
    const all = await history(`?from=${iso(now - 7 * DAY + 1)}&to=${iso(now + 1)}`)
    expect(all.status).toBe(200)
    expectHours(all.body.hours, reference(now - 7 * DAY + 1, now + 1))
    expect(all.body.hours).toHaveLength(6)
  })

  test("hours count when they start in [from, to); to alone reads the day before it", async () => {
    const span = await history(`?from=${iso(currentHour - 5 * HOUR + 1)}&to=${iso(currentHour - HOUR)}`)
    expect(span.status).toBe(200)
    expect(span.body.hours.map((h: Hour) => h.startAt)).toEqual([4, 3].map((h) => iso(currentHour - h * HOUR)))
    expectHours(span.body.hours, reference(currentHour - 5 * HOUR + 1, currentHour - HOUR))
    const toOnly = await history(`?to=${iso(currentHour - 4 * HOUR)}`)
    expectHours(toOnly.body.hours, reference(currentHour - 28 * HOUR, currentHour - 4 * HOUR))
    expect(toOnly.body.hours).toHaveLength(1)
    const future = await history(`?from=${iso(now + HOUR)}&to=${iso(now + 2 * HOUR)}`)
    expect(future.body).toEqual({ resourceId: ID, hours: [] })
    const quiet = await history("", "hist.quiet")
    expect(quiet).toMatchObject({ status: 200, body: { resourceId: "hist.quiet", hours: [] } })
  })

  test("a bad span or date is 400 INVALID_REQUEST {error, message}; an unknown resource 404 NOT_FOUND", async () => {
    const refusals: ReadonlyArray<readonly [string, string]> = [
      [`?from=${iso(now)}&to=${iso(now)}`, "from must be before to"],
      [`?from=${iso(now)}&to=${iso(now - HOUR)}`, "from must be before to"],
      [`?from=${iso(now + HOUR)}`, "from must be before to"],
      [`?from=${iso(now - 7 * DAY - 1000)}`, "retentionDays (7)"],
      [`?from=${iso(now - 30 * DAY)}&to=${iso(now - 20 * DAY)}`, "retentionDays (7)"],
      ["?from=yesterday", "from"],
      ["?to=2025-01-01", "to"],
      ["?from=2024-02-30T00:00:00Z", "from"],
      ["?to=2025-01-01T10:00:00", "to"],
      ["?from=1", "from"]
    ]
    for (const [query, message] of refusals) {
      const { status, body } = await history(query)
      expect([query, status]).toEqual([query, 400])
      expect(Object.keys(body).sort()).toEqual(["error", "message"])
      expect(body.error).toBe("INVALID_REQUEST")
      expect(body.message).toContain(message)
    }
    const exactlySeven = await history(`?from=${iso(now - 7 * DAY)}&to=${iso(now)}`)
    expect(exactlySeven.status).toBe(200)
    const offset = await history(
      `?from=${encodeURIComponent(new Date(now - 2 * HOUR).toISOString().replace("Z", "+00:00"))}`
    )
    expect(offset.status).toBe(200)
    const unknown = await history("", "no-such-resource")
    expect(unknown.status).toBe(404)
    expect(unknown.body).toMatchObject({ error: "NOT_FOUND" })
    expect(unknown.body.message).toContain("no-such-resource")
  })

  test("/openapi.json documents the endpoint, its span parameters and its answers", async () => {
    const { body } = await request(`${server.url}/openapi.json`)
    const operation = body.paths["/v1/resources/{id}/history"].get
    expect(
      operation.parameters
        .filter((p: { in: string }) => p.in === "query")
        .map((p: { name: string; schema: unknown }) => [p.name, p.schema])
    ).toEqual([
      ["from", { type: "string", format: "date-time" }],
      ["to", { type: "string", format: "date-time" }]
    ])
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(["200", "400", "404"]))
  })
})
