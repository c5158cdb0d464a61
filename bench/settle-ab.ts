/**
 * Settle overhead against another checkout, `npm run bench:settle:ab -- <checkout> [--their-fixtures]`
 * (a few minutes).
 *
 * `bench:settle` run in two checkouts one after the other differs by up to a third from run to
 * run on one machine, more than the change it is meant to show. This starts both services in one
 * process (each checkout's own code and dependencies, which must be installed) and interleaves
 * their rounds, so load, warmth and the disk hit both alike: 1 and 1,000 resources paying the
 * payee, each side on its own SQLite file, the direct facilitator calls in every round too.
 * Payments carry `ADDRESS` credentials, which code before stellar-sdk 17 reads too. The fixture
 * facilitator and the payments are this checkout's, or with `--their-fixtures` the other's. Prints
 * each added p50 and the ratio this/other. Loopback only.
 *
 * The other checkout needs the test helpers this one starts services with (`testConfig`,
 * `startServer`, the verification stack's `entry`), as every commit since 002766d has them.
 */
import { resolve } from "node:path"
import {
  interleavedRounds,
  type PaymentKit,
  p50,
  payments,
  type ServiceKit,
  settlingService
} from "./support/settleRig.js"

const SETTLES = Number(process.env.BENCH_SETTLES ?? 400)
const ROUNDS = 8
const WARM_UP = 10

const [otherArg, ...flags] = process.argv.slice(2)
if (otherArg === undefined) {
  console.error("usage: npm run bench:settle:ab -- <other checkout> [--their-fixtures]")
  process.exit(2)
}
const other = resolve(otherArg)
const here = resolve(import.meta.dir, "..")
const kitOf = async (root: string): Promise<ServiceKit> => ({
  ...(await import(`${root}/test/support/server.ts`)),
  entry: (await import(`${root}/test/fixtures/verificationStack.ts`)).entry
})
const fixtureRoot = flags.includes("--their-fixtures") ? other : here
const payment: PaymentKit = await import(`${fixtureRoot}/test/fixtures/stellarPayment.ts`)
const { startFacilitator } = await import(`${fixtureRoot}/test/fixtures/facilitator.ts`)
const { FIXTURE_PAY_TO, startX402Fixture } = await import(`${fixtureRoot}/test/fixtures/x402Resource.ts`)

const facilitator = startFacilitator()
const target = await startX402Fixture()
const sides = { other: await kitOf(other), this: await kitOf(here) }

let batch = 0
const setUp = async (side: keyof typeof sides, payees: number) => ({
  label: `${side} ${payees}`,
  server: await settlingService(sides[side], payees, facilitator.url, (i: number) => target.url(`/paid/${i}`)),
  bodies: await payments(payment, FIXTURE_PAY_TO, SETTLES + WARM_UP, 1_000_000 + ++batch * 100_000, true),
  through: [] as Array<number>
})

const cases = [await setUp("other", 1), await setUp("this", 1), await setUp("other", 1000), await setUp("this", 1000)]
const directBodies = await payments(payment, FIXTURE_PAY_TO, SETTLES + WARM_UP, 500_000, true)
const direct = await interleavedRounds(facilitator.url, directBodies, cases, {
  settles: SETTLES,
  rounds: ROUNDS,
  warmUp: WARM_UP
})

console.log(
  `${SETTLES} settles each way, ${ROUNDS} interleaved rounds, fixtures of ${fixtureRoot}; direct p50 ${p50(direct).toFixed(2)} ms`
)
const added = new Map(cases.map((c) => [c.label, p50(c.through) - p50(direct)]))
for (const c of cases) console.log(`${c.label.padEnd(11)} added p50 ${added.get(c.label)!.toFixed(2)} ms`)
for (const payees of [1, 1000]) {
  console.log(
    `${String(payees).padStart(5)} resources paying the payee: this / other ${(added.get(`this ${payees}`)! / added.get(`other ${payees}`)!).toFixed(3)}`
  )
}
for (const c of cases) await c.server.close()
await facilitator.stop()
await target.stop()
