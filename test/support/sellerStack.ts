import type { Config } from "../../src/config.js"
import { startFacilitator } from "../fixtures/facilitator.js"
import { type FixtureLedgerOptions, startFixtureLedger } from "../fixtures/ledger.js"
import { startPaidResource } from "../fixtures/paidResource.js"
import { facilitatorsAnswered, ledgerAt, startServer, testConfig } from "./server.js"

export const SELLER_PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
export const SELLER_RESOURCE_ID = "seller.rwa.inspect"

/**
 * A seller's stock x402 resource server using this service as its facilitator, with a fixture
 * facilitator backend settling onto a fixture ledger, all on loopback. `configure` adds to the
 * service's config (given the fixture ledger and facilitator, to point an embedded facilitator at
 * the one or put a front before the other; a `catalog` array is listed after the seller's entry); `apiKey` is
 * what the seller (and the polls here) send when keys are configured.
 */
export const startSellerStack = async (
  configure: (
    base: Config,
    ledger: ReturnType<typeof startFixtureLedger>,
    backend: ReturnType<typeof startFacilitator>
  ) => Partial<Config> = () => ({}),
  apiKey?: string,
  ledgerOptions: FixtureLedgerOptions = {}
) => {
  const ledger = startFixtureLedger(ledgerOptions)
  const backend = startFacilitator({ ledger })
  const resource = startPaidResource({ payTo: SELLER_PAY_TO, amount: "10000" })
  const base = testConfig()
  const { catalog: more, ...configured } = configure(base, ledger, backend)
  const server = await startServer(
    testConfig({
      facilitators: [{ id: "fixture", url: backend.url }],
      catalog: [resource.catalogEntry(SELLER_RESOURCE_ID), ...(Array.isArray(more) ? more : [])],
      probes: { ...base.probes, allowPrivateTargets: true },
      ledger: ledgerAt(ledger),
      ...configured
    })
  )
  const headers: Record<string, string> = apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` }
  await facilitatorsAnswered(server.url, headers)
  // The seller's resource server answers its 402 through this service as its facilitator.
  await resource.useFacilitator(`${server.url}/x402`, apiKey)
  return {
    server,
    backend,
    resource,
    ledger,
    stop: async () => {
      await server.close()
      await resource.stop()
      await backend.stop()
      ledger.stop()
    }
  }
}
