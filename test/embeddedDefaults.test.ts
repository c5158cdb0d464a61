import { afterAll, describe, expect, test } from "bun:test"
import { mkdtempSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DEFAULT_EMBEDDED } from "../src/config.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { ledgerAt, request, startServer, testConfig } from "./support/server.js"

/**
 * The bundled default backend: with nothing configured the service lists one embedded testnet
 * facilitator (its key created on first start) that answers /supported with no ledger traffic at
 * all, so a fresh start reaches no host on its own.
 */
const ledger = startFixtureLedger()
afterAll(() => ledger.stop())

describe("the bundled embedded facilitator", () => {
  test("is listed healthy, advertises exact on testnet with fees sponsored, creates its key 0600, and reads nothing from the ledger", async () => {
    const keyFile = join(mkdtempSync(join(tmpdir(), "sextant-default-")), "data", "facilitator.key")
    const server = await startServer(
      testConfig({ facilitators: [{ ...DEFAULT_EMBEDDED, feeAccountKeyFile: keyFile }], ledger: ledgerAt(ledger) })
    )
    try {
      const facilitators = (await request(`${server.url}/x402/facilitators`)).body.facilitators
      expect(facilitators).toMatchObject([
        {
          id: "embedded-testnet",
          healthy: true,
          kinds: [{ x402Version: 2, scheme: "exact", network: "stellar:testnet", extra: { areFeesSponsored: true } }]
        }
      ])
      expect((await request(`${server.url}/x402/supported`)).body.kinds).toEqual([
        { x402Version: 2, scheme: "exact", network: "stellar:testnet", extra: { areFeesSponsored: true } }
      ])
      expect(statSync(keyFile).mode & 0o777).toBe(0o600)
      await Bun.sleep(500)
      expect(ledger.rpcCalls).toEqual([])
    } finally {
      await server.close()
    }
  })
})
