import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type * as Payments from "../../test/fixtures/stellarPayment.js"
import type * as Stack from "../../test/fixtures/verificationStack.js"
import type * as Server from "../../test/support/server.js"

/** What `bench:settle` and `bench:settle:ab` share: the client, the p50, payments and a service ready to settle them. */

export const p50 = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** Milliseconds from sending `body` to reading the whole 200 answer; anything else stops the bench. */
export const post = async (url: string, body: unknown) => {
  const start = performance.now()
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${text}`)
  return performance.now() - start
}

/** A checkout's payment fixtures (this one's, or another checkout's of the same shape). */
export type PaymentKit = Pick<typeof Payments, "buildExactPayment" | "exactRequirements" | "settleBody">

/**
 * `count` distinct signed settle bodies paying `payTo` (the auth entry's expiry makes each
 * transaction unique), with `ADDRESS` credentials when `legacyForm`: what code before
 * stellar-sdk 17 can read too (a checkout whose builder takes no form ignores it).
 */
export const payments = (kit: PaymentKit, payTo: string, count: number, from: number, legacyForm = false) => {
  const requirements = kit.exactRequirements({ payTo })
  const form = legacyForm ? { form: "address" as const } : {}
  return Promise.all(
    Array.from({ length: count }, async (_, i) =>
      kit.settleBody(await kit.buildExactPayment(requirements, { validUntilLedger: from + i, ...form }), requirements)
    )
  )
}

/** The helpers a checkout's tests start a service with. */
export interface ServiceKit {
  readonly testConfig: typeof Server.testConfig
  readonly startServer: typeof Server.startServer
  readonly entry: typeof Stack.entry
}

/**
 * A service on a SQLite file (synchronous = FULL: the journal's fsync is part of the figure) whose
 * catalog has `payees` resources at `paidUrl(i)` paying the payee, each probed healthy once, with
 * nothing due in the probe schedule: the rounds time settles, not the first probe pass beside them.
 */
export const settlingService = async (
  kit: ServiceKit,
  payees: number,
  facilitatorUrl: string,
  paidUrl: (i: number) => string
) => {
  const base = kit.testConfig()
  const config = kit.testConfig({
    database: join(mkdtempSync(join(tmpdir(), "sextant-bench-settle-")), "sextant.db"),
    catalog: Array.from({ length: payees }, (_, i) => kit.entry(`payee-${i}`, paidUrl(i))),
    facilitators: [{ id: "fixture", url: facilitatorUrl }],
    probes: { ...base.probes, allowPrivateTargets: true, concurrency: 32 },
    budgets: { ...base.budgets, globalFeeStroops: 1e15, perPrincipalFeeStroops: 1e15, spendWindowUsd: 1e9 },
    ledger: { ...base.ledger, pollIntervalSeconds: 3600 },
    // Every payee resource is validated and settles come in bulk from one address: no rate limits.
    limits: { ...base.limits, validate: null, settle: null, verify: null }
  })
  const server = await kit.startServer(config)
  for (let i = 0; i < payees; i += 32) {
    await Promise.all(
      config.catalog.slice(i, i + 32).map((e) => post(`${server.url}/v1/validate`, { resourceId: e.resource.id }))
    )
  }
  const waiting = () =>
    server.runtime.runPromise(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql<{
            n: number
          }>`SELECT COUNT(*) AS n FROM probe_schedule WHERE due_ms <= ${Date.now()} OR lease_owner IS NOT NULL`
      )
    )
  while (Number((await waiting())[0]?.n) > 0) await new Promise((resolve) => setTimeout(resolve, 100))
  return server
}

/** A service timed by the rounds: its URL, the bodies it settles, and its timings once run. */
export interface SettleCase {
  readonly server: { readonly url: string }
  readonly bodies: ReadonlyArray<unknown>
  readonly through: Array<number>
}

/**
 * Warms up (JIT, prepared statements, connections), then times `settles` settles each way in
 * `rounds` rounds. Every service is up from the start and each round runs the direct calls, then
 * every case, in the opposite order each other round: load from other processes, how warm this
 * process is and which case goes first hit all alike (measured one after the other, the first case
 * came out about 1 ms slower whichever it was). Fills each case's `through`; answers the direct timings.
 */
export const interleavedRounds = async (
  facilitatorUrl: string,
  directBodies: ReadonlyArray<unknown>,
  cases: ReadonlyArray<SettleCase>,
  { settles, rounds, warmUp }: { readonly settles: number; readonly rounds: number; readonly warmUp: number }
) => {
  for (let i = 0; i < warmUp; i++) {
    await post(`${facilitatorUrl}/settle`, directBodies[i])
    for (const c of cases) await post(`${c.server.url}/x402/settle`, c.bodies[i])
  }
  const direct: Array<number> = []
  const perRound = Math.ceil(settles / rounds)
  for (let round = 0; round < rounds; round++) {
    const from = warmUp + round * perRound
    for (let i = from; i < from + perRound; i++) direct.push(await post(`${facilitatorUrl}/settle`, directBodies[i]))
    for (const c of round % 2 === 0 ? cases : [...cases].reverse()) {
      for (let i = from; i < from + perRound; i++)
        c.through.push(await post(`${c.server.url}/x402/settle`, c.bodies[i]))
    }
  }
  return direct
}
