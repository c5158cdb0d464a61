import { Clock, Context, Effect, Layer, Schema } from "effect"
import { AppConfig } from "../config.js"
import { Discovery } from "../discovery/Discovery.js"
import type { ResourceDetail } from "../domain/catalog.js"
import type { NotFound } from "../domain/errors.js"
import type { ResourceId } from "../domain/ids.js"
import { emptyMetrics, type ResourceMetrics } from "../domain/metrics.js"
import type { Observation } from "../domain/observations.js"
import { ServiceStatus } from "../domain/resources.js"
import type { JournalEntry, SettlementTransition } from "../domain/settlements.js"
import type { FacilitatorStatus } from "../domain/x402.js"
import { CatalogTableRepo, type TableRow, TableSort } from "../store/CatalogTableRepo.js"
import { MetricsRepo } from "../store/MetricsRepo.js"
import { ObservationsRepo } from "../store/ObservationsRepo.js"
import { SettlementJournal } from "../store/SettlementJournal.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { windowMs } from "../verification/metrics.js"
import { decodeWindow } from "../verification/rollingWindow.js"
import { FacilitatorPool } from "../x402/FacilitatorPool.js"
import { type WindowSeries, windowSeries } from "./series.js"

export const PAGE_SIZE = 50
const RECENT_OBSERVATIONS = 20
const JOURNAL_SHOWN = 50

export interface StatusReaderShape {
  readonly catalog: (query: CatalogQuery) => Effect.Effect<CatalogView>
  readonly resource: (id: ResourceId) => Effect.Effect<ResourceView, NotFound>
  readonly facilitators: Effect.Effect<ReadonlyArray<FacilitatorStatus>>
  readonly journal: Effect.Effect<JournalView>
}

/** What the status page shows, read through the services that answer the JSON API. */
export class StatusReader extends Context.Tag("sextant/StatusReader")<StatusReader, StatusReaderShape>() {
  static readonly Live = Layer.effect(
    StatusReader,
    Effect.suspend(() => make)
  )
}

/** The table's state, as its links and form carry it in the query string. */
export interface CatalogQuery {
  readonly capability?: string | undefined
  readonly status?: ServiceStatus | undefined
  readonly sort: TableSort
  readonly descending: boolean
  /** 1-based. */
  readonly page: number
}

const isSort = Schema.is(TableSort)
const isStatus = Schema.is(ServiceStatus)

/** A page number as the table's links write it: `Number` alone reads `1e300` as a whole number. */
const PAGE = /^[1-9]\d{0,5}$/

/** Why the `page` parameter is refused (400), or null: absent, or 1 to 999999 in decimal digits. */
export const pageRefusal = (params: URLSearchParams): string | null => {
  const page = params.get("page")
  return page === null || PAGE.test(page) ? null : "page must be a whole number from 1 to 999999, in digits"
}

/** Reads the table's query string leniently: anything unknown falls back to the default view. */
export const parseCatalogQuery = (params: URLSearchParams): CatalogQuery => {
  const sort = params.get("sort")
  const status = params.get("status")
  const capability = params.get("capability")
  const page = params.get("page")
  return {
    sort: isSort(sort) ? sort : "provider",
    descending: params.get("dir") === "desc",
    page: page !== null && PAGE.test(page) ? Number(page) : 1,
    ...(isStatus(status) ? { status } : {}),
    ...(capability !== null && capability !== "" && capability.length <= 100 ? { capability } : {})
  }
}

export interface CatalogRow extends TableRow {
  readonly metrics: ResourceMetrics
}

export interface CatalogView {
  readonly query: CatalogQuery
  readonly rows: ReadonlyArray<CatalogRow>
  readonly total: number
  readonly pageSize: number
  readonly capabilities: ReadonlyArray<string>
  readonly windowHours: number
}

export interface ResourceView {
  readonly detail: ResourceDetail
  readonly series: WindowSeries
  readonly recent: ReadonlyArray<Observation>
  readonly windowHours: number
  /** The `did:jwk` key that signed the newest signed challenge's offers; null when none was signed. */
  readonly offerSigner: string | null
}

/** A journal entry with what the operator must know of it: the reason of its latest change. */
export interface JournalLine {
  readonly entry: JournalEntry
  readonly reason: string | null
}

export interface JournalView {
  readonly counts: ReadonlyMap<string, number>
  /** Unresolved entries, first on the page: each may or may not have paid. */
  readonly indeterminate: ReadonlyArray<JournalLine>
  readonly recent: ReadonlyArray<JournalLine>
}

const latestReason = (history: ReadonlyArray<SettlementTransition>) => history[history.length - 1]?.reason ?? null

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const table = yield* CatalogTableRepo
  const evidence = yield* EvidenceReader
  const discovery = yield* Discovery
  const observations = yield* ObservationsRepo
  const metrics = yield* MetricsRepo
  const journal = yield* SettlementJournal
  const pool = yield* FacilitatorPool
  const verification = config.verification
  const window = windowMs(verification)

  const catalog = Effect.fn("StatusReader.catalog")(function* (query: CatalogQuery) {
    const nowMs = yield* Clock.currentTimeMillis
    const { rows, total } = yield* table.page({
      ...query,
      offset: (query.page - 1) * PAGE_SIZE,
      limit: PAGE_SIZE,
      clock: {
        nowMs,
        windowMs: window,
        sampleScale: verification.confidenceSampleScale,
        halfLifeMs: verification.confidenceHalfLifeSeconds * 1000
      }
    })
    const found = yield* evidence.forResources(rows.map((r) => r.id))
    return {
      query,
      total,
      pageSize: PAGE_SIZE,
      capabilities: yield* table.capabilities(),
      windowHours: verification.windowHours,
      rows: rows.map((row) => ({ ...row, metrics: found.get(row.id)?.metrics ?? emptyMetrics(row.id) }))
    } satisfies CatalogView
  })

  const resource = Effect.fn("StatusReader.resource")(function* (id: ResourceId) {
    const detail: ResourceDetail = yield* discovery.get(id)
    const nowMs = yield* Clock.currentTimeMillis
    const inWindow = yield* observations.window(id, nowMs - window)
    const recent = yield* observations.page(id, RECENT_OBSERVATIONS, null)
    const state = (yield* metrics.windowStates([id])).get(id) ?? null
    return {
      offerSigner: decodeWindow(state)?.offerSigner?.kid ?? null,
      detail,
      series: windowSeries(inWindow, detail.paymentOptions, nowMs - window, nowMs, verification.windowHours),
      recent: recent.observations,
      windowHours: verification.windowHours
    } satisfies ResourceView
  }) as (id: ResourceId) => Effect.Effect<ResourceView, NotFound>

  const lines = (entries: ReadonlyArray<JournalEntry>) =>
    Effect.forEach(entries, (entry) =>
      Effect.map(journal.history(entry.id), (h): JournalLine => ({ entry, reason: latestReason(h) }))
    )

  const journalView = Effect.gen(function* () {
    const counts = yield* journal.countsByState()
    const indeterminate = yield* lines(yield* journal.list({ state: "indeterminate", limit: JOURNAL_SHOWN }))
    const recent = yield* journal.list({ limit: 20 })
    return {
      counts,
      indeterminate,
      recent: yield* lines(recent.filter((e) => e.state !== "indeterminate"))
    } satisfies JournalView
  }).pipe(Effect.withSpan("StatusReader.journal"))

  return {
    catalog,
    resource,
    facilitators: pool.status,
    journal: journalView
  } satisfies StatusReaderShape
})
