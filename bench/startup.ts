/**
 * `npm run bench:startup`: start-up of `sextant serve` with a catalog of 100,000 resources
 * (BENCH_RESOURCES) that the store already holds unchanged: time from spawn until the service
 * logs that it listens (catalog loaded, every layer built), and the process's peak RSS (VmHWM) then. The first start,
 * which writes the whole catalog, is timed too. Baseline, run beside it: a bare Bun process that
 * reads and parses the same catalog file, opens the same SQLite file and answers HTTP.
 *
 * Nothing leaves loopback: ledger endpoints point at a closed loopback port, no facilitators, no
 * vertical, and the catalog's URLs are loopback addresses the probe guard refuses without a packet.
 *
 * Env: BENCH_RESOURCES (100000), BENCH_RUNS (3 unchanged starts; the best and the worst are shown).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { syntheticCatalog } from "./support/syntheticCatalog.js"

const RESOURCES = Number(process.env.BENCH_RESOURCES ?? 100_000)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const ROOT = resolve(import.meta.dir, "..")
const CLOSED = "http://127.0.0.1:9"

const folder = mkdtempSync(join(tmpdir(), "sextant-bench-startup-"))
const catalogFile = join(folder, "catalog.json")
const database = join(folder, "sextant.db")
writeFileSync(catalogFile, JSON.stringify(syntheticCatalog(RESOURCES)))
const configFile = join(folder, "config.json")
writeFileSync(
  configFile,
  JSON.stringify({
    host: "127.0.0.1",
    port: 0,
    database,
    catalog: catalogFile,
    vertical: { enabled: false },
    probes: { intervalSeconds: 86_400 },
    ledger: { sorobanRpcUrl: CLOSED, horizonUrl: CLOSED }
  })
)

/** Peak resident set size of a process so far, in MiB (Linux: VmHWM). */
const peakRssMiB = (pid: number) => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmHWM:"))
  return Number(line?.match(/(\d+)/)?.[1] ?? 0) / 1024
}

/** Spawns `argv`, waits for the port it prints (and a 200 from `path` unless null), and answers seconds and peak RSS then. */
const start = async (argv: ReadonlyArray<string>, path: string | null, portPattern: RegExp) => {
  const began = performance.now()
  const child = Bun.spawn([...argv], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "", PORT: "0" }
  })
  let output = ""
  const reader = (stream: ReadableStream<Uint8Array>) =>
    (async () => {
      const decoder = new TextDecoder()
      const read = stream.getReader()
      for (;;) {
        const { done, value } = await read.read()
        if (done) return
        output += decoder.decode(value)
      }
    })()
  void reader(child.stdout as ReadableStream<Uint8Array>)
  void reader(child.stderr as ReadableStream<Uint8Array>)
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${output.slice(-2000)}`)
      const port = output.match(portPattern)?.[1]
      if (port !== undefined && path === null)
        return { seconds: (performance.now() - began) / 1000, rssMiB: peakRssMiB(child.pid) }
      if (port !== undefined) {
        const answer = await fetch(`http://127.0.0.1:${port}${path}`).catch(() => null)
        if (answer?.status === 200)
          return { seconds: (performance.now() - began) / 1000, rssMiB: peakRssMiB(child.pid) }
      }
      if (performance.now() - began > 300_000) throw new Error(`not ready after 300 s: ${output.slice(-2000)}`)
      await Bun.sleep(5)
    }
  } finally {
    child.kill("SIGKILL")
    await child.exited
  }
}

// Ready means the service logged that it listens, which it does once the catalog is loaded and every
// layer is built. The first probe cycle starts right after and is not start-up: with every resource
// due at once it keeps even /health/live waiting for minutes at 100,000 resources (the probe path's
// own issue, spread by due times there).
const serve = () =>
  start([process.execPath, "src/main.ts", "serve", "--config", configFile], null, /Listening on http:\/\/\S+:(\d+)/)
const bareScript = join(folder, "bare.ts")
writeFileSync(
  bareScript,
  `import { Database } from "bun:sqlite"
const entries = JSON.parse(await Bun.file(${JSON.stringify(catalogFile)}).text())
const db = new Database(${JSON.stringify(database)})
const count = db.query("SELECT COUNT(*) AS n FROM resources").get()
const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ status: "ok", entries: entries.length, count }) })
console.log("bare listening on http://127.0.0.1:" + server.port)
`
)
const bare = () => start([process.execPath, bareScript], "/", /bare listening on http:\/\/\S+:(\d+)/)

try {
  const first = await serve()
  console.log(
    `catalog: ${RESOURCES.toLocaleString("en")} resources in a ${(readFileSync(catalogFile).length / 1e6).toFixed(0)} MB file`
  )
  console.log(
    `first start (writes every entry): ready in ${first.seconds.toFixed(2)} s, peak RSS ${first.rssMiB.toFixed(0)} MiB`
  )
  const unchanged = []
  const baselines = []
  for (let i = 0; i < RUNS; i++) {
    unchanged.push(await serve())
    baselines.push(await bare())
  }
  const by = <A>(items: Array<A>, key: (a: A) => number) => [...items].sort((a, b) => key(a) - key(b))
  const best = by(unchanged, (r) => r.seconds)[0]!
  const worst = by(unchanged, (r) => r.seconds)[unchanged.length - 1]!
  const bareBest = by(baselines, (r) => r.seconds)[0]!
  console.log(
    `unchanged catalog, ${RUNS} starts: ready in ${best.seconds.toFixed(2)}-${worst.seconds.toFixed(2)} s, ` +
      `peak RSS ${Math.min(...unchanged.map((r) => r.rssMiB)).toFixed(0)}-${Math.max(...unchanged.map((r) => r.rssMiB)).toFixed(0)} MiB`
  )
  console.log(
    `bare Bun (parse the catalog file, open the store, serve): ready in ${bareBest.seconds.toFixed(2)} s, peak RSS ${bareBest.rssMiB.toFixed(0)} MiB`
  )
  console.log(`ratio bare / sextant start-up time: ${(bareBest.seconds / best.seconds).toFixed(3)}`)
} finally {
  rmSync(folder, { recursive: true, force: true })
}
