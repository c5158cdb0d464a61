import { afterAll, describe, expect, test } from "bun:test"
import { Effect, Either } from "effect"
import { kindsIncomplete, notKnownRetryAfter, poolReadiness } from "../src/x402/readiness.js"
import { type FixtureFacilitator, startFacilitator } from "./fixtures/facilitator.js"
import { buildExactPayment, exactRequirements, settleBody } from "./fixtures/stellarPayment.js"
import { it } from "./support/effectTest.js"
import { pollUntil } from "./support/poll.js"
import { refusal, request, startServer, testConfig } from "./support/server.js"

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"

describe("pool readiness (pure)", () => {
  const backend = (id: string, polled: boolean, answered: boolean, lastError: string | null = null) => ({
    id,
    polled,
    answered,
    lastError
  })

  test("not ready while a first poll is under way, or while no backend has ever answered", () => {
    expect(poolReadiness([backend("a", false, false)])).toEqual({
      ready: false,
      reason: 'waiting for the first /supported answer of facilitator(s) "a"'
    })
    expect(poolReadiness([backend("a", true, false, "cannot connect")])).toEqual({
      ready: false,
      reason: 'no facilitator has answered /supported yet ("a": cannot connect)'
    })
  })

  test("ready once every backend was polled and one answered; with none configured, at once", () => {
    expect(poolReadiness([backend("a", true, true), backend("b", true, false, "down")])).toEqual({ ready: true })
    expect(poolReadiness([])).toEqual({ ready: true })
  })

  test("a kind is not known while any backend has not answered; retry in 1 s during a first poll, else at the next poll", () => {
    expect(kindsIncomplete([backend("a", true, true), backend("b", true, false)])).toBe(true)
    expect(kindsIncomplete([backend("a", true, true)])).toBe(false)
    expect(notKnownRetryAfter([backend("a", false, false)], 30)).toBe(1)
    expect(notKnownRetryAfter([backend("a", true, false)], 30)).toBe(30)
    expect(notKnownRetryAfter([backend("a", true, false)], 0.2)).toBe(1)
  })
})

const fixtures: Array<FixtureFacilitator> = []
const servers: Array<Awaited<ReturnType<typeof startServer>>> = []
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()))
  await Promise.all(fixtures.map((f) => f.stop()))
})

const start = async (backendUrl: string) => {
  const server = await startServer(
    testConfig({ facilitators: [{ id: "slow", url: backendUrl }], facilitatorPollSeconds: 0.5 })
  )
  servers.push(server)
  return server
}

const settleOf = async () => {
  const requirements = exactRequirements({ payTo: PAY_TO })
  return settleBody(await buildExactPayment(requirements), requirements)
}

describe("a slow start is not a refusal", () => {
  test("a backend whose /supported first answers after 2 s: 503 with Retry-After until then, and both recover by themselves", async () => {
    const backend = startFacilitator()
    fixtures.push(backend)
    backend.setSupportedDelay(2_000)
    const server = await start(backend.url)
    const body = await settleOf()

    // Raw where the test reads the Retry-After header; the typed client elsewhere.
    const settle = await request(`${server.url}/x402/settle`, { method: "POST", json: body })
    expect(settle.status).toBe(503)
    expect(settle.body).toMatchObject({
      error: "FACILITATORS_NOT_READY",
      message: expect.stringContaining("exact"),
      retryAfterSeconds: 1
    })
    expect(settle.headers.get("retry-after")).toBe("1")
    const { x402, health } = server.client
    expect(await refusal(x402.verify({ payload: body, headers: {} }))).toMatchObject({
      error: "FACILITATORS_NOT_READY"
    })
    expect(await refusal(x402.supported())).toMatchObject({ error: "FACILITATORS_NOT_READY" })
    const ready = await refusal(health.ready())
    expect("error" in ready && { _tag: ready._tag, error: ready.error, message: ready.message }).toEqual({
      _tag: "NotReady",
      error: "NOT_READY",
      message: 'waiting for the first /supported answer of facilitator(s) "slow"'
    })

    await pollUntil(
      "readiness recovers",
      async () => Either.isRight(await it.run(Effect.either(server.client.health.ready()))),
      (ready) => ready,
      { timeoutMs: 6_000 }
    )
    expect((await it.run(x402.supported())).kinds).toHaveLength(1)
    // Now known: this payee has no evidence, so the settle goes on to the policy step (403), not 503.
    const after = await refusal(x402.settle({ payload: body, headers: {} }))
    expect(after).toMatchObject({ error: "POLICY_DENIED", code: "NO_VERIFICATION_EVIDENCE" })
    // 422 stays for a kind the backend, having answered, does not support.
    const pubnet = exactRequirements({ payTo: PAY_TO, network: "stellar:pubnet" })
    const paymentPayload = await buildExactPayment(pubnet)
    const unsupported = await refusal(
      x402.verify({ payload: { x402Version: 2, paymentPayload, paymentRequirements: pubnet }, headers: {} })
    )
    expect(unsupported).toMatchObject({ error: "UNSUPPORTED_PAYMENT_KIND" })
  }, 15_000)

  test("a backend down at start: not ready, settles 503 with the next poll as Retry-After; it comes up and both recover", async () => {
    const backend = startFacilitator()
    fixtures.push(backend)
    await backend.refuse()
    const server = await start(backend.url)
    await pollUntil(
      "the first poll fails",
      async () =>
        Either.match(await it.run(Effect.either(server.client.health.ready())), {
          onLeft: (refused) => ("message" in refused ? refused.message : ""),
          onRight: () => ""
        }),
      (m) => m.startsWith("no facilitator"),
      { timeoutMs: 3_000, everyMs: 20 }
    )
    const ready = await refusal(server.client.health.ready())
    expect(ready).toMatchObject({ error: "NOT_READY", message: expect.stringContaining('"slow": cannot connect') })
    const settle = await refusal(server.client.x402.settle({ payload: await settleOf(), headers: {} }))
    expect(settle).toMatchObject({ error: "FACILITATORS_NOT_READY", retryAfterSeconds: 1 })

    backend.listen()
    await pollUntil(
      "readiness recovers",
      async () => Either.isRight(await it.run(Effect.either(server.client.health.ready()))),
      (ready) => ready,
      { timeoutMs: 5_000 }
    )
    const after = await refusal(server.client.x402.settle({ payload: await settleOf(), headers: {} }))
    expect(after).toMatchObject({ error: "POLICY_DENIED" })
  }, 15_000)
})
