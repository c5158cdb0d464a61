/**
 * `npm run soak`: a bounded mixed load on loopback against `sextant serve` run as its own process
 * (as `npm start` runs it), printing every 30 s the process's resident memory, open file
 * descriptors, the SQLite WAL size and the p50 / p99 latency of the requests of that period.
 * Flat figures across periods are the point: memory, descriptors and the WAL must not grow with
 * the number of requests served.
 *
 *   npm run soak                          # 2 minutes
 *   npm run soak -- --minutes 10          # or SOAK_MINUTES=10
 *   npm run soak -- --concurrency 16      # clients in parallel (default 8)
 *
 * The load: catalog reads and search, policy evaluations and routes, validates of catalog
 * resources and of new URLs (the latter meet the rate limit), verifies, settles of new payments
 * (through a local fixture facilitator) and repeats of one settled payment. Everything runs on
 * 127.0.0.1; the ledger address is a closed loopback port.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { startSellerProcess } from "../test/support/sellerProcess.js"
import { SELLER_RESOURCE_ID } from "../test/support/sellerStack.js"

const argument = (name: string) => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? undefined : process.argv[i + 1]
}
const minutes = Number(argument("minutes") ?? process.env.SOAK_MINUTES ?? 2)
const concurrency = Number(argument("concurrency") ?? process.env.SOAK_CONCURRENCY ?? 8)
const periodSeconds = Number(argument("period") ?? 30)
if (!(minutes > 0) || !(concurrency > 0) || !(periodSeconds > 0)) {
  process.stderr.write("usage: bun bench/soak.ts [--minutes N] [--concurrency N] [--period seconds]\n")
  process.exit(2)
}

const stack = await startSellerProcess({
  budgets: { globalFeeStroops: 1e15, perPrincipalFeeStroops: 1e12 },
  limits: { settle: null, verify: null, receipts: null }
})
const child = await stack.launch()
await stack.validate(child)
const pid = child.child.pid

const rssMiB = () => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"))
  return Number(/(\d+)/.exec(line ?? "")?.[1] ?? 0) / 1024
}
const fds = () => readdirSync(`/proc/${pid}/fd`).length
const walMiB = () => {
  try {
    return statSync(`${stack.database}-wal`).size / 1024 / 1024
  } catch {
    return 0
  }
}

const post = (path: string, json: unknown) =>
  fetch(`${child.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(json)
  })
const get = (path: string) => fetch(`${child.url}${path}`)

const repeated = await stack.settleBodyFor(1)
await post("/x402/settle", repeated).then((r) => r.text())
let buyer = 1_000
let newUrl = 0

/** One request of the mix, chosen by weight. */
const requests: ReadonlyArray<readonly [number, () => Promise<Response>]> = [
  [20, () => get("/v1/resources")],
  [10, () => get(`/v1/resources/${SELLER_RESOURCE_ID}`)],
  [10, () => post("/v1/search", { query: "inspect" })],
  [8, () => post("/v1/policies/evaluate", { policy: { maxPricePerRequestUsd: 0.01 }, resourceId: SELLER_RESOURCE_ID })],
  [7, () => post("/v1/routes", { capability: "rwa.inspect" })],
  [8, () => post("/v1/validate", { resourceId: SELLER_RESOURCE_ID })],
  [4, () => post("/v1/validate", { url: `${stack.resource.url}?n=${newUrl++}` })],
  [8, async () => post("/x402/verify", await stack.settleBodyFor(buyer++))],
  [12, async () => post("/x402/settle", await stack.settleBodyFor(buyer++))],
  [13, () => post("/x402/settle", repeated)]
]
const totalWeight = requests.reduce((sum, [w]) => sum + w, 0)
const pick = () => {
  let r = Math.random() * totalWeight
  for (const [weight, send] of requests) {
    r -= weight
    if (r < 0) return send
  }
  return requests[0]![1]
}

let latencies: Array<number> = []
let statuses = new Map<number, number>()
let failures = 0
const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!

const endsAt = Date.now() + minutes * 60_000
const client = async () => {
  while (Date.now() < endsAt) {
    const started = performance.now()
    try {
      const response = await pick()()
      await response.arrayBuffer()
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
    } catch {
      failures++
    }
    latencies.push(performance.now() - started)
  }
}

const rows: Array<Record<string, string | number>> = []
let reportedAt = Date.now()
const report = (elapsedSeconds: number) => {
  reportedAt = Date.now()
  const sorted = [...latencies].sort((a, b) => a - b)
  const row = {
    t: `${Math.round(elapsedSeconds)}s`,
    requests: sorted.length,
    "p50 ms": Number(percentile(sorted, 0.5).toFixed(1)),
    "p99 ms": Number(percentile(sorted, 0.99).toFixed(1)),
    "rss MiB": Number(rssMiB().toFixed(1)),
    fds: fds(),
    "wal MiB": Number(walMiB().toFixed(2)),
    statuses:
      [...statuses.entries()]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s}:${n}`)
        .join(" ") + (failures > 0 ? ` errors:${failures}` : "")
  }
  rows.push(row)
  process.stdout.write(`${JSON.stringify(row)}\n`)
  latencies = []
  statuses = new Map()
  failures = 0
}

process.stdout.write(
  `soak: ${minutes} min, ${concurrency} clients, a line every ${periodSeconds} s (pid ${pid}, store ${stack.database})\n`
)
const started = Date.now()
const ticker = setInterval(() => report((Date.now() - started) / 1000), periodSeconds * 1000)
await Promise.all(Array.from({ length: concurrency }, client))
clearInterval(ticker)
// The run's last stretch, when it is long enough to say something (a tail of a few requests is not).
if (Date.now() - reportedAt > (periodSeconds * 1000) / 2) report((Date.now() - started) / 1000)

const first = rows[0]
const last = rows.at(-1)
if (first !== undefined && last !== undefined) {
  process.stdout.write(
    `first → last period: rss ${first["rss MiB"]} → ${last["rss MiB"]} MiB, fds ${first.fds} → ${last.fds}, wal ${first["wal MiB"]} → ${last["wal MiB"]} MiB, p99 ${first["p99 ms"]} → ${last["p99 ms"]} ms\n`
  )
}
await stack.stop()
