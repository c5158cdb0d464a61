import { afterAll, describe, expect, test } from "bun:test"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startFacilitator } from "./fixtures/facilitator.js"
import { payFor, startPaidResource } from "./fixtures/paidResource.js"
import { buildExactPayment, settleBody } from "./fixtures/stellarPayment.js"
import { LOOPBACK, pollUntil } from "./support/poll.js"
import { launchServe, serveArgv, type ServeChild } from "./support/serveProcess.js"
import { request } from "./support/server.js"

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const RESOURCE_ID = "seller.rwa.inspect"

const backend = startFacilitator()
const resource = startPaidResource({ payTo: PAY_TO, amount: "10000" })
const children: Array<ServeChild> = []

afterAll(async () => {
  await Promise.all(children.map((c) => c.kill()))
  await backend.stop()
  await resource.stop()
})

/**
 * Starts `sextant serve` as its own process (its config binds port 0) and resolves with the
 * address it reports once it listens and its facilitator answered /supported.
 */
const serve = async (configFile: string, logFile: string) => {
  const launched = await launchServe(serveArgv(configFile), { logFile })
  children.push(launched)
  await pollUntil(
    "the service sees its facilitator healthy",
    async () => (await request(`${launched.url}/x402/supported`)).body.kinds?.length ?? 0,
    (kinds) => kinds > 0,
    LOOPBACK
  )
  return launched
}

describe("crash recovery", () => {
  test("a service killed while a backend holds its settle open restarts with the entry indeterminate, never re-sent", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sextant-crash-"))
    const configFile = join(dir, "sextant.json")
    writeFileSync(
      configFile,
      JSON.stringify({
        host: "127.0.0.1",
        port: 0,
        database: join(dir, "sextant.db"),
        facilitators: [{ id: "fixture", url: backend.url }],
        catalog: [resource.catalogEntry(RESOURCE_ID)],
        probes: { allowPrivateTargets: true, intervalSeconds: 86400 },
        vertical: { enabled: false }
      })
    )

    const first = await serve(configFile, join(dir, "first.log"))
    await resource.useFacilitator(`${first.url}/x402`)
    const probe = await request(`${first.url}/v1/validate`, { method: "POST", json: { resourceId: RESOURCE_ID } })
    expect(probe.body.healthy).toBe(true)
    const unpaid = await fetch(resource.url)
    let body: unknown = null
    await payFor(unpaid.headers.get("payment-required") ?? "", async (requirements) => {
      const payment = await buildExactPayment(requirements)
      body = settleBody(payment, requirements)
      return payment
    })

    backend.setMode("hang")
    const inFlight = request(`${first.url}/x402/settle`, { method: "POST", json: body }).catch((e: unknown) => e)
    await pollUntil("the backend holds a settle", async () => backend.calls("/settle"), (n) => n > 0, LOOPBACK)
    expect(backend.calls("/settle")).toBe(1)
    await first.kill()
    expect(await inFlight).toBeInstanceOf(Error)
    backend.setMode("succeed")

    const second = await serve(configFile, join(dir, "second.log"))
    const retry = await request(`${second.url}/x402/settle`, { method: "POST", json: body })
    expect(retry.status).toBe(409)
    expect(retry.body).toMatchObject({ error: "SETTLEMENT_UNRESOLVED" })
    const id = /settlement ([0-9a-f-]{36})/.exec(retry.body.message)?.[1]
    expect(id).toBeDefined()
    const record = await request(`${second.url}/x402/settlements/${id}`)
    expect(record.status).toBe(200)
    expect(record.body).toMatchObject({ id, state: "indeterminate", payTo: PAY_TO, amount: "10000", transaction: null })
    // Neither the restart nor the retry sent the payment again.
    expect(backend.calls("/settle")).toBe(1)
  }, 20_000)
})
