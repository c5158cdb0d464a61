/**
 * The local target of bench/scale, run as its own process so it does not share the prober's
 * event loop: every path answers the fixture's real x402 challenge (captured once from
 * test/fixtures/x402Resource.ts), as a cheap static 402. Prints its origin on stdout.
 */
import { startX402Fixture } from "../test/fixtures/x402Resource.js"

const fixture = await startX402Fixture()
const sample = await fetch(fixture.url("/paid/0"))
const challenge = sample.headers.get("payment-required")
await sample.body?.cancel()
await fixture.stop()
if (challenge === null) throw new Error("the fixture did not answer a challenge")

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () =>
    new Response("{}", { status: 402, headers: { "content-type": "application/json", "PAYMENT-REQUIRED": challenge } })
})
console.log(`http://127.0.0.1:${server.port}`)
