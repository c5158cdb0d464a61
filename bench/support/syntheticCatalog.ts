import { TESTNET_USDC } from "../../src/config.js"
import { ResourceId } from "../../src/domain/ids.js"
import type { CatalogEntry } from "../../src/domain/resources.js"

/**
 * A large catalog with text that behaves like a real one: a few hundred capabilities, names and
 * descriptions drawn from a vocabulary where some words are common ("data": one resource in
 * three) and most are rare, so a text search meets both selective and broad terms.
 */
const NOUNS = [
  "ledger",
  "asset",
  "payment",
  "account",
  "price",
  "oracle",
  "weather",
  "compliance",
  "identity",
  "invoice",
  "shipment",
  "credit",
  "bond",
  "token",
  "market",
  "news",
  "translation",
  "image",
  "search",
  "route"
]
const VERBS = ["inspect", "verify", "lookup", "stream", "convert", "score", "summarise", "forecast", "index", "audit"]
const FILLER = ["data", "fast", "stellar", "api", "service", "realtime", "historical", "batch", "premium", "open"]
const PAY_TO = "GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5"

const pick = <A>(items: ReadonlyArray<A>, n: number) => items[n % items.length]!

export const syntheticEntry = (i: number): CatalogEntry => {
  const noun = pick(NOUNS, i)
  const verb = pick(VERBS, Math.floor(i / NOUNS.length))
  const id = ResourceId.make(`syn-${String(i).padStart(6, "0")}`)
  const units = 1000 * (1 + (i % 50))
  return {
    resource: {
      id,
      type: "http",
      name: `${noun} ${verb} ${i}`,
      description: `${pick(FILLER, i % 3 === 0 ? 0 : i)} ${noun} ${pick(FILLER, i * 7)} service number ${i} for agents`,
      url: `http://127.0.0.1:9/syn/${i}`,
      method: "GET",
      capabilities: [`${noun}.${verb}`, `${noun}.g${i % 10}`]
    },
    provider: { id: `provider-${i % 500}`, name: `Provider ${i % 500}` },
    paymentOptions: [
      {
        network: "stellar:testnet",
        scheme: "exact",
        asset: TESTNET_USDC,
        amount: String(units),
        amountUsd: units / 1e7,
        payTo: PAY_TO
      }
    ]
  }
}

export const syntheticCatalog = (size: number): Array<CatalogEntry> =>
  Array.from({ length: size }, (_, i) => syntheticEntry(i))
