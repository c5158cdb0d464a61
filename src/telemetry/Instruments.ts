import { Context, Effect, Layer } from "effect"
import { Counter, Gauge, Histogram, Registry } from "prom-client"

/** How one settle request ended, as a bounded label (see `settleResult`). */
export type SettleResult = "settled" | "pending" | "declined" | "refused" | "error"

/** The facilitator API call a backend was asked for. */
export type FacilitatorCall = "supported" | "verify" | "settle"

/**
 * Where the services count what they do, for `/metrics`. Every label is bounded: an outcome, a
 * result, an error code, a configured backend id, a route template; never a resource id, an
 * address, a key or a URL, which would make the series unbounded and leak what they name.
 */
export interface InstrumentsShape {
  readonly probe: (outcome: string, latencyMs: number | null) => Effect.Effect<void>
  readonly settle: (result: SettleResult, code: string, seconds: number) => Effect.Effect<void>
  readonly facilitatorCall: (backend: string, call: FacilitatorCall, result: string) => Effect.Effect<void>
  readonly receiptIssued: Effect.Effect<void>
  /** An embedded facilitator's settle by outcome (`settled`, `failed`, `pending`, `refused`), with its time from send to ledger when it got there. */
  readonly embeddedSettle: (backend: string, outcome: string, ledgerSeconds: number | null) => Effect.Effect<void>
  /** An embedded facilitator's fee account balance (null: not read yet) and the channel leases in use. */
  readonly embeddedState: (backend: string, balanceStroops: bigint | null, leasesInUse: number) => Effect.Effect<void>
  readonly httpRequest: (method: string, route: string, status: number, seconds: number) => Effect.Effect<void>
  /** The registry `/metrics` exposes; null for the default, which records nothing. */
  readonly registry: Registry | null
}

const noop: InstrumentsShape = {
  probe: () => Effect.void,
  settle: () => Effect.void,
  facilitatorCall: () => Effect.void,
  receiptIssued: Effect.void,
  embeddedSettle: () => Effect.void,
  embeddedState: () => Effect.void,
  httpRequest: () => Effect.void,
  registry: null
}

/** Latency buckets in seconds, from a loopback answer to a settle waiting for the ledger. */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** The instruments that move with events; state read at scrape time lives in `Exposition`. */
const makeInstruments = (): InstrumentsShape => {
  const registry = new Registry()
  const registers = [registry]
  const probes = new Counter({
    name: "sextant_probes_total",
    help: "Probes recorded, by outcome",
    labelNames: ["outcome"],
    registers
  })
  const probeLatency = new Histogram({
    name: "sextant_probe_duration_seconds",
    help: "Time from a probe's request to its last answer byte, probes that got an answer",
    buckets: SECONDS,
    registers
  })
  const settles = new Counter({
    name: "sextant_settle_requests_total",
    help: "POST /x402/settle requests, by result and error code (OK when settled)",
    labelNames: ["result", "code"],
    registers
  })
  const settleLatency = new Histogram({
    name: "sextant_settle_duration_seconds",
    help: "Time to answer a settle request, by result",
    labelNames: ["result"],
    buckets: SECONDS,
    registers
  })
  const facilitatorCalls = new Counter({
    name: "sextant_facilitator_calls_total",
    help: "Calls to facilitator backends, by configured backend id, call and result",
    labelNames: ["backend", "call", "result"],
    registers
  })
  const embeddedSettles = new Counter({
    name: "sextant_embedded_settles_total",
    help: "Settles of the embedded facilitator, by configured backend id and outcome",
    labelNames: ["backend", "outcome"],
    registers
  })
  const timeToLedger = new Histogram({
    name: "sextant_embedded_time_to_ledger_seconds",
    help: "Time from sendTransaction to the ledger's SUCCESS or FAILED, embedded facilitator settles",
    labelNames: ["backend"],
    buckets: SECONDS,
    registers
  })
  const feeBalance = new Gauge({
    name: "sextant_embedded_fee_account_balance_stroops",
    help: "Last read XLM balance of the embedded facilitator's fee account",
    labelNames: ["backend"],
    registers
  })
  const leases = new Gauge({
    name: "sextant_embedded_channel_leases_in_use",
    help: "Sequence sources of the embedded facilitator leased to a settle now",
    labelNames: ["backend"],
    registers
  })
  const receipts = new Counter({ name: "sextant_receipts_issued_total", help: "Signed receipts issued", registers })
  const httpRequests = new Counter({
    name: "sextant_http_requests_total",
    help: "HTTP requests, by method, route template and status",
    labelNames: ["method", "route", "status"],
    registers
  })
  const httpLatency = new Histogram({
    name: "sextant_http_request_duration_seconds",
    help: "HTTP request duration, by method and route template",
    labelNames: ["method", "route"],
    buckets: SECONDS,
    registers
  })
  return {
    probe: (outcome, latencyMs) =>
      Effect.sync(() => {
        probes.inc({ outcome })
        if (latencyMs !== null) probeLatency.observe(latencyMs / 1000)
      }),
    settle: (result, code, seconds) =>
      Effect.sync(() => {
        settles.inc({ result, code })
        settleLatency.observe({ result }, seconds)
      }),
    facilitatorCall: (backend, call, result) => Effect.sync(() => facilitatorCalls.inc({ backend, call, result })),
    receiptIssued: Effect.sync(() => receipts.inc()),
    embeddedSettle: (backend, outcome, ledgerSeconds) =>
      Effect.sync(() => {
        embeddedSettles.inc({ backend, outcome })
        if (ledgerSeconds !== null) timeToLedger.observe({ backend }, ledgerSeconds)
      }),
    embeddedState: (backend, balanceStroops, leasesInUse) =>
      Effect.sync(() => {
        if (balanceStroops !== null) feeBalance.set({ backend }, Number(balanceStroops))
        leases.set({ backend }, leasesInUse)
      }),
    httpRequest: (method, route, status, seconds) =>
      Effect.sync(() => {
        httpRequests.inc({ method, route, status: String(status) })
        httpLatency.observe({ method, route }, seconds)
      }),
    registry
  }
}

/**
 * The counters and histograms of this process. A `Context.Reference` whose default records
 * nothing: the production graph provides `Instruments.Live` (one registry per service graph, so
 * two services in one test process never share counts), and a test that builds a single service
 * needs no extra layer.
 */
export class Instruments extends Context.Reference<Instruments>()("sextant/Instruments", {
  defaultValue: (): InstrumentsShape => noop
}) {
  static readonly Live = Layer.sync(Instruments, makeInstruments)
}

/** Gauges set from the store and the pool at each scrape (see `Exposition`), on the same registry. */
export const stateGauges = (registry: Registry) => {
  const registers = [registry]
  const gauge = (name: string, help: string, labelNames: ReadonlyArray<string> = []) =>
    new Gauge({ name, help, labelNames: [...labelNames], registers })
  return {
    catalog: gauge("sextant_catalog_resources", "Listed resources, by status and verification level", [
      "status",
      "level"
    ]),
    journal: gauge("sextant_settlement_journal_entries", "Settlement journal entries, by state", ["state"]),
    backendHealthy: gauge("sextant_facilitator_backend_healthy", "1 when the facilitator backend's last check passed", [
      "backend"
    ]),
    feeUsed: gauge("sextant_fee_budget_used_stroops", "Global fee budget reserved in the current budget window"),
    feeRemaining: gauge("sextant_fee_budget_remaining_stroops", "Global fee budget left in the current budget window"),
    spendUsed: gauge(
      "sextant_spend_window_used_usd",
      "Worst-case spend of settlements in the current window, all principals"
    ),
    spendLimit: gauge("sextant_spend_window_limit_usd", "Configured spend window per principal")
  }
}
