import { afterAll, describe, expect, test } from "bun:test"
import type { Subprocess } from "bun"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { startFacilitator } from "./fixtures/facilitator.js"
import { payFor, startPaidResource } from "./fixtures/paidResource.js"
import { buildExactPayment, settleBody } from "./fixtures/stellarPayment.js"
import { request } from "./support/server.js"

const ROOT = resolve(import.meta.dir, "..")
const BUN = join(ROOT, "node_modules", ".bin", "bun")
const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const RESOURCE_ID = "seller.rwa.inspect"

const backend = startFacilitator()
const resource = startPaidResource({ payTo: PAY_TO, amount: "10000" })
const children: Array<Subprocess> = []

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL")
  await backend.stop()
  await resource.stop()
})

/** Starts `sextant serve` as its own process and resolves with its base URL once it listens. */
const serve = async (configFile: string) => {
  const child = Bun.spawn([BUN, "src/main.ts", "serve", "--config", configFile], { cwd: ROOT, stdout: "pipe", stderr: "pipe" })
  children.push(child)
  const reader = child.stdout.getReader()
  const decoder = new TextDecoder()
  let output = ""
  for (;;) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the service exited before listening: ${output}`)
    output += decoder.decode(value)
    const match = /Listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
    if (match?.[1]) {
      reader.releaseLock()
      const url = match[1]
      for (let i = 0; i < 300; i++) {
        const { body } = await request(`${url}/x402/supported`)
        if (body.kinds?.length > 0) return { child, url }
        await Bun.sleep(10)
      }
      throw new Error("the service never saw its facilitator healthy")
    }
  }
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

    const first = await serve(configFile)
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
    for (let i = 0; i < 300 && backend.calls("/settle") === 0; i++) await Bun.sleep(10)
    expect(backend.calls("/settle")).toBe(1)
    first.child.kill("SIGKILL")
    await first.child.exited
    expect(await inFlight).toBeInstanceOf(Error)
    backend.setMode("succeed")

    const second = await serve(configFile)
    const retry = await request(`${second.url}/x402/settle`, { method: "POST", json: body })
    expect(retry.status).toBe(409)
    expect(retry.body).toMatchObject({ error: "SETTLEMENT_INDETERMINATE" })
    const id = /settlement ([0-9a-f-]{36})/.exec(retry.body.message)?.[1]
    expect(id).toBeDefined()
    const record = await request(`${second.url}/x402/settlements/${id}`)
    expect(record.status).toBe(200)
    expect(record.body).toMatchObject({ id, state: "indeterminate", payTo: PAY_TO, amount: "10000", transaction: null })
    // Neither the restart nor the retry sent the payment again.
    expect(backend.calls("/settle")).toBe(1)
  }, 20_000)
})
