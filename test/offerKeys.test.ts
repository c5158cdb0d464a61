import { afterAll, describe, expect, test } from "bun:test"
import { generateKeyPairSync } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { decodePaymentRequiredHeader } from "@x402/core/http"
import { ResourceId } from "../src/domain/ids.js"
import { judgeOffers } from "../src/extensions/offerReceipt.js"
import { FAST_DEMO } from "./support/demoServe.js"
import { it } from "./support/effectTest.js"
import { pollUntil } from "./support/poll.js"
import { freePorts, spawnServe } from "./support/serveProcess.js"
import { NO_LEDGER, typedClient } from "./support/server.js"

/**
 * The sellers `serve` runs (the vertical, the demo providers) sign their offers with keys kept in
 * files beside the receipt signer's, so a buyer can take the `did:jwk` signer as the seller's
 * identity across restarts; a key that does change leaves a transition note naming both keys.
 * `sextant serve` is started three times on one folder: the store and the key files outlive it.
 */

const keys = mkdtempSync(join(tmpdir(), "sextant-offer-keys-"))
afterAll(() => rmSync(keys, { recursive: true, force: true }))
const [vertical, fast, slow, flaky, raiser] = freePorts(5) as [number, number, number, number, number]

const start = () =>
  spawnServe(() => ({
    host: "127.0.0.1",
    database: join(keys, "sextant.db"),
    signer: { ed25519KeyFile: join(keys, "signer.key") },
    // Each start follows a SIGKILL: claims it held come back after a lease, so keep the lease short.
    probes: { intervalSeconds: 1, timeoutMs: 1000, leaseSeconds: 2 },
    vertical: { port: vertical, horizonUrl: NO_LEDGER, sorobanRpcUrl: NO_LEDGER },
    ledger: { sorobanRpcUrl: NO_LEDGER, horizonUrl: NO_LEDGER, pollIntervalSeconds: 0.2 },
    demo: { ports: { fast, slow, flaky, raiser }, ...FAST_DEMO }
  }))

/** The key that signed the offers of a seller's unpaid answer, read as a buyer reads it. */
const signerAt = async (url: string) => {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ asset: "USDC" })
  })
  expect(response.status).toBe(402)
  const verdict = await judgeOffers(
    decodePaymentRequiredHeader(response.headers.get("payment-required")!) as Parameters<typeof judgeOffers>[0],
    { nowMs: Date.now(), probedUrl: url }
  )
  if (verdict._tag !== "signed") throw new Error(`offers not signed as expected: ${JSON.stringify(verdict)}`)
  return verdict.kid
}
const fastInspect = `http://127.0.0.1:${fast}/demo-fast/v1/rwa/inspect`
const verticalInspect = `http://127.0.0.1:${vertical}/stellar-intel/v1/rwa/inspect`

/** The service's view of resource `id`, through the typed client. */
const detailAt = async (url: string, id: string) =>
  it.run((await typedClient(url)).resources.get({ path: { id: ResourceId.make(id) } }))

/** Waits until a probe of demo-fast's inspect recorded an offer signed by `kid`. */
const probedWith = (url: string, kid: string) =>
  pollUntil(
    `a probe saw offers signed by ${kid.slice(0, 24)}…`,
    async () =>
      (
        await it.run(
          (
            await typedClient(url)
          ).verification.observations({
            path: { id: ResourceId.make("demo-fast.rwa.inspect") },
            urlParams: { limit: 5 }
          })
        )
      ).observations,
    (observations) => observations.some((o) => o.detail?.includes(`offer signed by ${kid}`) === true),
    { timeoutMs: 20_000, everyMs: 100 }
  )

describe("offer signing keys across restarts", () => {
  let first: { fast: string; vertical: string }

  test("the first start creates one key file per seller, mode 0600, beside the signer's", async () => {
    const service = await start()
    try {
      first = { fast: await signerAt(fastInspect), vertical: await signerAt(verticalInspect) }
      expect(first.fast).not.toBe(first.vertical)
      await probedWith(service.url, first.fast)
    } finally {
      await service.stop()
    }
    for (const name of [
      "offer-stellar-intel.key",
      "offer-demo-fast.key",
      "offer-demo-slow.key",
      "offer-demo-flaky.key",
      "offer-demo-raiser.key"
    ]) {
      const path = join(keys, name)
      expect(statSync(path).mode & 0o777).toBe(0o600)
      expect(readFileSync(path, "utf8")).toStartWith("-----BEGIN PRIVATE KEY-----")
    }
  }, 60_000)

  test("after a restart the same keys sign, and no key change is noted", async () => {
    const service = await start()
    try {
      expect(await signerAt(fastInspect)).toBe(first.fast)
      expect(await signerAt(verticalInspect)).toBe(first.vertical)
      await probedWith(service.url, first.fast)
      const detail = await detailAt(service.url, "demo-fast.rwa.inspect")
      expect(detail.transitions.filter((t) => t.reason.includes("offer signing key"))).toEqual([])
    } finally {
      await service.stop()
    }
  }, 60_000)

  test("a replaced key file signs from the next start, and the resource records the change naming both keys", async () => {
    writeFileSync(
      join(keys, "offer-demo-fast.key"),
      generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }),
      { mode: 0o600 }
    )
    const service = await start()
    try {
      const replaced = await signerAt(fastInspect)
      expect(replaced).not.toBe(first.fast)
      // The vertical's key was left alone.
      expect(await signerAt(verticalInspect)).toBe(first.vertical)
      const note = await pollUntil(
        "the key change is in the resource's transitions",
        async () =>
          (await detailAt(service.url, "demo-fast.rwa.inspect")).transitions.find((t) =>
            t.reason.includes("offer signing key changed")
          ),
        (found) => found !== undefined,
        { timeoutMs: 20_000, everyMs: 100 }
      )
      expect(note!.reason).toBe(`offer signing key changed from ${first.fast} to ${replaced}`)
      // A note, not a change of status.
      expect(note!.from).toBe(note!.to)
      // The status page shows the current signer.
      const page = await fetch(`${service.url}/status/resources/demo-fast.rwa.inspect`).then((r) => r.text())
      expect(page).toMatch(
        new RegExp(`<dd class="signer">.*title="${replaced.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"`)
      )
      // The vertical kept its key: nothing is noted on its resources.
      const other = (await detailAt(service.url, "stellar-intel.rwa.inspect")).transitions
      expect(other.filter((t) => t.reason.includes("offer signing key"))).toEqual([])
    } finally {
      await service.stop()
    }
  }, 60_000)
})
