import { afterAll, expect, test } from "bun:test"
import { Effect } from "effect"
import { ServicesLive } from "../src/app.js"
import { MAX_DESCRIPTION_LENGTH, MAX_NAME_LENGTH, MAX_URL_LENGTH, readItem } from "../src/catalog/bazaarItems.js"
import { Importer } from "../src/catalog/Importer.js"
import { TESTNET_USDC } from "../src/config.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO } from "./fixtures/x402Resource.js"
import { countingServer } from "./support/countingServer.js"
import { layer } from "./support/effectTest.js"
import { testConfig } from "./support/server.js"

const item = (i: number, more: Record<string, unknown> = {}) => ({
  resource: `http://127.0.0.1:9/paid/bound-${i}`,
  type: "http",
  x402Version: 2,
  accepts: [
    {
      scheme: "exact",
      network: "stellar:testnet",
      amount: FIXTURE_AMOUNT,
      asset: TESTNET_USDC,
      payTo: FIXTURE_PAY_TO,
      maxTimeoutSeconds: 60,
      extra: {}
    }
  ],
  lastUpdated: 1_764_000_000,
  ...more
})
const page = (items: Array<unknown>) =>
  Response.json({ x402Version: 2, items, pagination: { limit: 100, offset: 0, total: items.length } })

/** A private service the source tries to make this one reach; every request to it is counted. */
const internal = countingServer(() => page([item(0)]))

/** A configured source (so its own origin is trusted) that misbehaves on some paths. */
const hostile = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (request) => {
    const path = new URL(request.url).pathname
    if (path.startsWith("/redirect/"))
      return Response.redirect(`http://127.0.0.1:${internal.port}/discovery/resources`, 302)
    if (path.startsWith("/wide/")) return page(Array.from({ length: 101 }, (_, i) => item(i)))
    if (path.startsWith("/huge/")) return page([item(0, { description: "x".repeat(5 * 1024 * 1024) })])
    return page([item(1)])
  }
})

const services = ServicesLive(
  testConfig({
    catalog: [],
    catalogSources: [{ id: "hostile", url: `http://127.0.0.1:${hostile.port}`, intervalSeconds: 600 }]
  })
)
afterAll(() => {
  hostile.stop(true)
  internal.stop()
})

const pull = (location: string) =>
  Effect.either(Effect.flatMap(Importer, (importer) => importer.pull({ id: "hostile", location })))
const failure = (location: string) =>
  Effect.map(pull(location), (result) =>
    result._tag === "Left" ? (result.left as { reason: string }).reason : "imported"
  )

layer(services)("catalog imports are bounded like probes", (it) => {
  it.live("the configured source's own origin is read", () =>
    Effect.gen(function* () {
      const result = yield* pull(`http://127.0.0.1:${hostile.port}/ok`)
      expect(result._tag === "Right" && result.right.kept).toBe(1)
    })
  )

  it.live("a redirect to a private origin is refused by the outbound guard: nothing reaches it", () =>
    Effect.gen(function* () {
      expect(yield* failure(`http://127.0.0.1:${hostile.port}/redirect`)).toContain("non-public address")
      expect(yield* failure(`http://127.0.0.1:${internal.port}`)).toContain("non-public address")
      expect(internal.requests()).toBe(0)
    })
  )

  it.live("a page with more items than asked, or larger than the page cap, fails the pull", () =>
    Effect.gen(function* () {
      expect(yield* failure(`http://127.0.0.1:${hostile.port}/wide`)).toContain(
        "101 items where at most 100 were asked"
      )
      expect(yield* failure(`http://127.0.0.1:${hostile.port}/huge`)).toContain("bytes was not read")
    })
  )

  test("field lengths: names and descriptions are cut, an over-long URL makes the item invalid", () => {
    const deployment = { network: "stellar:testnet", assetContract: TESTNET_USDC, decimals: 7, networks: undefined }
    const long = readItem(
      item(2, { description: "d".repeat(50_000), metadata: { name: "n".repeat(5_000), provider: "p".repeat(5_000) } }),
      "s",
      deployment
    )
    if (long._tag !== "Kept") throw new Error(long._tag)
    expect(long.entry.resource.description).toHaveLength(MAX_DESCRIPTION_LENGTH)
    expect(long.entry.resource.name).toHaveLength(MAX_NAME_LENGTH)
    expect(long.entry.provider.name).toHaveLength(MAX_NAME_LENGTH)
    const url = readItem(item(3, { resource: `http://127.0.0.1:9/${"u".repeat(MAX_URL_LENGTH)}` }), "s", deployment)
    expect(url._tag).toBe("Invalid")
  })
})
