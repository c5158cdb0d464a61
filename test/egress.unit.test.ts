import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import { type Config, loadConfig } from "../src/config.js"
import { egressAllowed, egressRules } from "../src/outbound/egress.js"
import { configuredEndpoints } from "../src/outbound/endpoints.js"

const defaults = Either.getOrThrow(loadConfig(undefined, {}))
const testConfig = (overrides: Partial<Config> = {}): Config => ({ ...defaults, ...overrides })

const allowed = (rules: ReturnType<typeof egressRules>, url: string) => egressAllowed(rules, new URL(url))

describe("the egress rule (pure)", () => {
  const rules = egressRules(["http://127.0.0.1:4020/x402", "https://rpc.example.org", "not a url", null])

  test("a configured endpoint and the paths under it pass", () => {
    expect(allowed(rules, "http://127.0.0.1:4020/x402")).toBe(true)
    expect(allowed(rules, "http://127.0.0.1:4020/x402/verify")).toBe(true)
    expect(allowed(rules, "https://rpc.example.org/anything?at=all")).toBe(true)
  })

  test("another port, scheme, host, path or smuggled credentials do not", () => {
    expect(allowed(rules, "http://127.0.0.1:4021/x402/verify")).toBe(false)
    expect(allowed(rules, "https://127.0.0.1:4020/x402")).toBe(false)
    expect(allowed(rules, "http://127.0.0.1:4020/x4021")).toBe(false)
    expect(allowed(rules, "http://127.0.0.1:4020/admin/secret/did.json")).toBe(false)
    // Normalised by the URL parser before the decision.
    expect(allowed(rules, "http://127.0.0.1:4020/x402/../admin")).toBe(false)
    expect(allowed(rules, "http://user:pw@127.0.0.1:4020/x402")).toBe(false)
    expect(allowed(rules, "http://169.254.169.254/latest/meta-data")).toBe(false)
    expect(allowed(rules, "http://10.0.0.1/")).toBe(false)
  })

  test("nothing configured, nothing allowed", () => {
    expect(allowed(egressRules([]), "http://127.0.0.1:4020/")).toBe(false)
  })

  test("a configuration's endpoints: facilitators, ledger, vertical, OTLP, catalog sources, the buyer's service, and extras", () => {
    const base = testConfig()
    const config = testConfig({
      facilitators: [{ id: "a", url: "https://facilitator.example.com/x402" }],
      telemetry: { ...base.telemetry, otlpEndpoint: "http://127.0.0.1:4318" },
      catalogSources: [
        { id: "bazaar", url: "https://bazaar.example.com", intervalSeconds: 3600 }
      ] as unknown as typeof base.catalogSources,
      vertical: { ...base.vertical, horizonUrl: "https://horizon.example.net" }
    })
    const rules = configuredEndpoints(config, ["http://127.0.0.1:5000"])
    for (const url of [
      "https://facilitator.example.com/x402/settle",
      `${config.ledger.sorobanRpcUrl}`,
      "https://horizon.example.net/accounts/G",
      "http://127.0.0.1:4318/v1/traces",
      "https://bazaar.example.com/discovery/resources",
      `${config.buyer.service}/v1/routes`,
      `http://127.0.0.1:${config.port}/x402/verify`,
      "http://127.0.0.1:5000/v1/routes"
    ]) {
      expect([url, allowed(rules, url)]).toEqual([url, true])
    }
    expect(allowed(rules, "https://facilitator.example.com/admin")).toBe(false)
    expect(allowed(rules, "http://127.0.0.1:4319/v1/traces")).toBe(false)
  })
})
