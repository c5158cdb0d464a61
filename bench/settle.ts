/**
 * Settle overhead, `npm run bench:settle` (about a minute).
 *
 * What `/x402/settle` adds over calling the fixture facilitator's `/settle` directly, with one
 * client (requests one after another), when 1 and when 1,000 listed resources pay the payee.
 * The service runs in-process on a SQLite file (synchronous = FULL: the journal's fsync is part
 * of the figure); every resource paying the payee has healthy, current probe evidence, and the
 * rounds start once the probe schedule's first pass (every resource is due at start) is done, so
 * they time settles rather than a thousand probes committing beside them. Rounds interleave direct
 * and through-each-service requests (`interleavedRounds`). Prints the p50 of each and the added
 * p50. Loopback only. `bench:settle:ab` compares two checkouts in one process.
 */
import { startFacilitator } from "../test/fixtures/facilitator.js"
import * as Payments from "../test/fixtures/stellarPayment.js"
import { entry } from "../test/fixtures/verificationStack.js"
import { FIXTURE_PAY_TO, startX402Fixture } from "../test/fixtures/x402Resource.js"
import { startServer, testConfig } from "../test/support/server.js"
import { interleavedRounds, p50, payments, settlingService } from "./support/settleRig.js"

const SETTLES = Number(process.env.BENCH_SETTLES ?? 200)
const ROUNDS = 4
const WARM_UP = 10

const facilitator = startFacilitator()
const target = await startX402Fixture()

const setUp = async (payees: number) => ({
  payees,
  server: await settlingService({ testConfig, startServer, entry }, payees, facilitator.url, (i) =>
    target.url(`/paid/${i}`)
  ),
  bodies: await payments(Payments, FIXTURE_PAY_TO, SETTLES + WARM_UP, 1_000_000 + payees * 10_000),
  through: [] as Array<number>
})

const cases = [await setUp(1), await setUp(1000)]
const directBodies = await payments(Payments, FIXTURE_PAY_TO, SETTLES + WARM_UP, 500_000)
const direct = await interleavedRounds(facilitator.url, directBodies, cases, {
  settles: SETTLES,
  rounds: ROUNDS,
  warmUp: WARM_UP
})

console.log(
  `${SETTLES} settles each way, one client, ${ROUNDS} alternating rounds; direct p50 ${p50(direct).toFixed(2)} ms`
)
for (const { payees, through, server } of cases) {
  console.log(
    `${String(payees).padStart(5)} resources paying the payee: through /x402/settle p50 ${p50(through).toFixed(2)} ms, added p50 ${(p50(through) - p50(direct)).toFixed(2)} ms`
  )
  await server.close()
}

await facilitator.stop()
await target.stop()
