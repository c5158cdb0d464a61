import { afterAll, beforeAll, describe, expect } from "bun:test"
import { Effect } from "effect"
import { egressRules, installEgressGuard } from "../src/outbound/egress.js"
import { makeStellarData } from "../src/vertical/StellarData.js"
import { it } from "./support/effectTest.js"

/**
 * The vertical's `stellar.toml` lookup goes through the Connector, not the Stellar SDK's own
 * fetch: with the egress guard refusing every endpoint, an issuer's home domain is still read
 * (vetted and pinned), and an oversized or broken document is a finding, never a failure.
 */

let home: ReturnType<typeof Bun.serve>
let requests = 0
beforeAll(() => {
  home = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => {
      requests++
      const path = new URL(request.url).pathname
      if (path !== "/.well-known/stellar.toml") return new Response("no", { status: 404 })
      const host = request.headers.get("host") ?? ""
      if (host.startsWith("localhost")) return new Response(`NETWORK = "x"\n${"# padding\n".repeat(20_000)}`)
      return new Response('[DOCUMENTATION]\nORG_NAME = "Home Testnet"\n')
    }
  })
})
afterAll(() => home.stop(true))

const data = makeStellarData({
  horizonUrl: "http://127.0.0.1:9",
  sorobanRpcUrl: "http://127.0.0.1:9",
  networkPassphrase: "Test SDF Network ; September 2015",
  timeoutMs: 2000,
  allowPrivateHomeDomains: true
})

describe("stellar.toml through the Connector", () => {
  it.live("read with the global fetch refusing everything: the SDK's fetch is not used", () =>
    Effect.gen(function* () {
      const uninstall = installEgressGuard(egressRules([]))
      try {
        const before = requests
        const lookup = yield* data.stellarToml(`127.0.0.1:${home.port}`)
        expect(lookup).toMatchObject({ status: "published", document: { DOCUMENTATION: { ORG_NAME: "Home Testnet" } } })
        expect(requests - before).toBe(1)
      } finally {
        uninstall()
      }
    })
  )

  it.live("a document over the SDK's 100 KiB limit is unavailable, not read whole", () =>
    Effect.gen(function* () {
      const lookup = yield* data.stellarToml(`localhost:${home.port}`)
      expect(lookup).toMatchObject({ status: "unavailable" })
      expect((lookup as { reason: string }).reason).toContain("102400")
    })
  )
})
