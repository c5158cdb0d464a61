import { describe, expect, test } from "bun:test"
import { Either, Schema } from "effect"
import { EconomicProbesConfig, loadConfig } from "../src/config.js"
import { economicTargets } from "../src/economic/economicTargets.js"
import { policyContext } from "../src/policy/evaluate.js"
import { evidence, option, payee, record } from "./fixtures/evidence.js"

/**
 * The operator's probe budget paid to strangers, on the rules before the trust model: with
 * economic probes on and no `resources` list, every listed resource was a target in id order,
 * an attacker-registered one priced at maxPriceUsd with the attacker's payTo included.
 */
const config = Either.getOrThrow(loadConfig(undefined, {}))
const now = new Date("2026-11-27T10:00:00.000Z")
const context = policyContext(config, now)
const deployment = { network: config.network, assetContract: config.asset.assetContract }
const settings = (overrides: Partial<EconomicProbesConfig> = {}): EconomicProbesConfig => ({
  ...Schema.decodeSync(EconomicProbesConfig)({}),
  enabled: true,
  ...overrides
})
const untrusted = (id: string, source: string, payTo: string) => ({
  ...record(id, [option({ payTo, amountUsd: 0.01, amount: "100000" })], { provider: `host:${id}` }),
  listing: { listed: true, source, trusted: false }
})

describe("economic probe targets", () => {
  const operatorOwn = record("aaa.config", [option({ payTo: payee(1) })])
  const strangers = [
    untrusted("aab.registered", "registration", payee(66)),
    untrusted("aac.bazaar", "bazaar", payee(67)),
    untrusted("aad.imported", "import:x", payee(68))
  ]
  const listed = [operatorOwn, ...strangers]
  const seen = new Map(listed.map((r) => [r.resource.id, evidence(r.resource.id, now)]))

  test("by default only trusted resources are paid: never a registered, imported or bazaar one", () => {
    const { targets, skipped } = economicTargets(listed, seen, settings(), deployment, context)
    expect(targets.map((t) => t.record.resource.id)).toEqual<unknown>(["aaa.config"])
    expect(skipped).toEqual([])
    // An operator who wants strangers paid says so.
    const opened = economicTargets(listed, seen, settings({ includeUntrusted: true }), deployment, context)
    expect(opened.targets.map((t) => t.record.resource.id)).toEqual(listed.map((r) => r.resource.id))
  })

  test("per-payee and per-provider caps and a minimum history", () => {
    const samePayee = ["p.one", "p.two", "p.three"].map((id) =>
      record(id, [option({ payTo: payee(5) })], { provider: `prov-${id}` })
    )
    const sameProvider = ["q.one", "q.two", "q.three"].map((id, i) =>
      record(id, [option({ payTo: payee(10 + i) })], { provider: "q" })
    )
    const young = record("r.young", [option({ payTo: payee(20) })])
    const all = [...samePayee, ...sameProvider, young]
    const history = new Map(
      all.map((r) => [
        r.resource.id,
        evidence(r.resource.id, now, r === young ? { metrics: { observationCount: 2 } } : {})
      ])
    )
    const { targets, skipped } = economicTargets(
      all,
      history,
      settings({ maxPerPayee: 1, maxPerProvider: 2, minObservations: 3 }),
      deployment,
      context
    )
    expect(targets.map((t) => t.record.resource.id)).toEqual<unknown>(["p.one", "q.one", "q.two"])
    expect(skipped.map((s) => [s.resourceId, s.reason.split(" (")[0]])).toEqual([
      ["p.two", `payee ${payee(5)} was paid for 1 resources this cycle`],
      ["p.three", `payee ${payee(5)} was paid for 1 resources this cycle`],
      ["q.three", `provider "q" was paid for 2 resources this cycle`],
      ["r.young", "2 probes in the window, fewer than the 3 minObservations"]
    ])
  })
})
