/**
 * Settle overhead, `npm run bench:settle` (about a minute).
 *
 * What `/x402/settle` adds over calling the fixture facilitator's `/settle` directly, with one
 * client (requests one after another), when 1 and when 1,000 listed resources pay the payee.
 * The service runs in-process on a SQLite file (synchronous = FULL: the journal's fsync is part
 * of the figure); every resource paying the payee has healthy, current probe evidence. Rounds
 * alternate direct and through-the-service requests so load from other processes hits both alike.
 * Prints the p50 of each and the added p50. Loopback only.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startFacilitator } from "../test/fixtures/facilitator.js"
import { buildExactPayment, exactRequirements, settleBody } from "../test/fixtures/stellarPayment.js"
import { entry } from "../test/fixtures/verificationStack.js"
import { FIXTURE_PAY_TO, startX402Fixture } from "../test/fixtures/x402Resource.js"
import { startServer, testConfig } from "../test/support/server.js"

const SETTLES = Number(process.env.BENCH_SETTLES ?? 200)
const ROUNDS = 4

const facilitator = startFacilitator()
const target = await startX402Fixture()

const p50 = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** `count` distinct signed payments to the payee (the auth entry's expiry makes each transaction unique). */
const payments = async (count: number, from: number) => {
  const requirements = exactRequirements({ payTo: FIXTURE_PAY_TO })
  return Promise.all(
    Array.from({ length: count }, async (_, i) => settleBody(await buildExactPayment(requirements, { validUntilLedger: from + i }), requirements))
  )
}

const post = async (url: string, body: unknown) => {
  const start = performance.now()
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${text}`)
  return performance.now() - start
}

const measure = async (payees: number) => {
  const base = testConfig()
  const config = testConfig({
    database: join(mkdtempSync(join(tmpdir(), "sextant-bench-settle-")), "sextant.db"),
    catalog: Array.from({ length: payees }, (_, i) => entry(`payee-${i}`, target.url(`/paid/${i}`))),
    facilitators: [{ id: "fixture", url: facilitator.url }],
    probes: { ...base.probes, allowPrivateTargets: true, concurrency: 32 },
    budgets: { ...base.budgets, globalFeeStroops: 1e15, perPrincipalFeeStroops: 1e15, spendWindowUsd: 1e9 },
    ledger: { ...base.ledger, pollIntervalSeconds: 3600 },
    // The bench validates every payee resource and settles in bulk from one address: no rate limits.
    limits: { ...base.limits, validate: null, settle: null, verify: null }
  })
  const server = await startServer(config)
  // One healthy probe of each resource: current evidence that lets the payee be paid.
  for (let i = 0; i < payees; i += 32) {
    await Promise.all(
      config.catalog.slice(i, i + 32).map((e) => post(`${server.url}/v1/validate`, { resourceId: e.resource.id }))
    )
  }
  const bodies = await payments(SETTLES * 2 + 20, 1_000_000 + payees * 10_000)
  let next = 0
  // Warm-up: JIT, prepared statements, connections.
  for (let i = 0; i < 10; i++) {
    await post(`${facilitator.url}/settle`, bodies[next])
    await post(`${server.url}/x402/settle`, bodies[next++])
  }
  const direct: Array<number> = []
  const through: Array<number> = []
  const perRound = Math.ceil(SETTLES / ROUNDS)
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < perRound; i++) direct.push(await post(`${facilitator.url}/settle`, bodies[next + i]))
    for (let i = 0; i < perRound; i++) through.push(await post(`${server.url}/x402/settle`, bodies[next + perRound + i]))
    next += perRound * 2
  }
  await server.close()
  return { direct: p50(direct), through: p50(through) }
}

console.log(`${SETTLES} settles each way, one client, ${ROUNDS} alternating rounds`)
for (const payees of [1, 1000]) {
  const { direct, through } = await measure(payees)
  console.log(
    `${String(payees).padStart(5)} resources paying the payee: direct p50 ${direct.toFixed(2)} ms, through /x402/settle p50 ${through.toFixed(2)} ms, added p50 ${(through - direct).toFixed(2)} ms`
  )
}

await facilitator.stop()
await target.stop()
