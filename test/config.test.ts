import { describe, expect, test } from "bun:test"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Either } from "effect"
import { loadConfig, plainHttpOffLoopback } from "../src/config.js"
import { serveUntilExit } from "./support/serveProcess.js"

const dir = mkdtempSync(join(tmpdir(), "sextant-config-"))
const writeConfig = (name: string, content: unknown) => {
  const path = join(dir, name)
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content))
  return path
}

const entry = (amount: string, amountUsd: number) => ({
  resource: {
    id: "demo.one",
    type: "http",
    name: "One",
    description: "d",
    url: "http://127.0.0.1:9/x",
    capabilities: ["demo.one"]
  },
  provider: { id: "p", name: "P" },
  paymentOptions: [
    {
      network: "stellar:testnet",
      scheme: "exact",
      asset: "CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA",
      amount,
      amountUsd,
      payTo: "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
    }
  ]
})

const BAD_CONFIGS: ReadonlyArray<readonly [string, unknown, string]> = [
  ["unknown network", { network: "stellar:futurenet" }, "network"],
  [
    "malformed asset contract",
    {
      asset: {
        network: "stellar:testnet",
        assetContract: "CNOTACONTRACT",
        symbol: "USDC",
        decimals: 7,
        minimumAmount: "1",
        maximumAmount: "10"
      }
    },
    "asset.assetContract"
  ],
  [
    "duplicate facilitator id",
    {
      facilitators: [
        { id: "a", url: "http://127.0.0.1:1" },
        { id: "a", url: "http://127.0.0.1:2" }
      ]
    },
    "facilitators[1].id"
  ],
  [
    "amount and amountUsd disagree at 7 decimals",
    { catalog: [entry("10000", 0.01)] },
    "catalog[0].paymentOptions[0].amountUsd"
  ],
  ["unknown field", { prot: 1 }, "prot"],
  ["pubnet without a Soroban RPC URL (it has no public one)", { network: "stellar:pubnet" }, "ledger.sorobanRpcUrl"],
  ["a ledger URL that is not http(s)", { ledger: { horizonUrl: "ftp://horizon.example" } }, "ledger.horizonUrl"],
  [
    "a ledger RPC over plain http off loopback",
    { ledger: { sorobanRpcUrl: "http://rpc.provider.example" } },
    "ledger.sorobanRpcUrl"
  ],
  [
    "a Horizon over plain http on a private address",
    { ledger: { horizonUrl: "http://10.0.0.1:8000" } },
    "ledger.horizonUrl"
  ],
  [
    "the vertical's own RPC over plain http off loopback",
    { vertical: { sorobanRpcUrl: "http://169.254.169.254" } },
    "vertical.sorobanRpcUrl"
  ],
  ["unparsable file", "{ not json", "config file"],
  ["two demo providers on one port", { demo: { ports: { fast: 5100, slow: 5100 } } }, "demo.ports.slow"],
  ["a demo provider on the vertical's port", { demo: { ports: { raiser: 4021 } } }, "demo.ports.raiser"],
  ["a demo port of 0 (catalog URLs must name it)", { demo: { ports: { fast: 0 } } }, "demo.ports.fast"],
  ["a price raise that lowers the price", { demo: { priceRaiseFactor: 0.5 } }, "demo.priceRaiseFactor"]
]

describe("ledger endpoints must be https off loopback", () => {
  test("a pure judgement over addresses: loopback may be plain http, anything else may not", () => {
    for (const url of [
      "http://127.0.0.1:8000",
      "http://127.9.9.9",
      "http://localhost:8000/rpc",
      "http://[::1]:8000",
      "https://10.0.0.1",
      "https://rpc.example"
    ]) {
      expect(plainHttpOffLoopback(url)).toBe(false)
    }
    for (const url of [
      "http://10.0.0.1:8000",
      "http://169.254.169.254/latest",
      "http://rpc.example",
      "http://[fe80::1]",
      "http://127.0.0.1.evil.example"
    ]) {
      expect(plainHttpOffLoopback(url)).toBe(true)
    }
  })
})

describe("config", () => {
  test("no file gives the documented embedded defaults and the demo catalog", () => {
    const config = Either.getOrThrow(loadConfig(undefined, {}))
    expect(config).toMatchObject({
      host: "127.0.0.1",
      port: 4020,
      database: "./data/sextant.db",
      network: "stellar:testnet",
      facilitators: [
        {
          id: "embedded-testnet",
          type: "stellar",
          network: "stellar:testnet",
          feeAccountKeyFile: "./data/facilitator.key",
          channels: 0
        }
      ],
      apiKeys: [],
      signer: { ed25519KeyFile: "./data/signer.key" }
    })
    expect(config.catalog.length).toBeGreaterThanOrEqual(4)
    for (const e of config.catalog) expect(e.resource.url.startsWith("http://127.0.0.1:")).toBe(true)
  })

  test("PORT, HOST and DATABASE_URL override the file", () => {
    const path = writeConfig("ok.json", { port: 5000, host: "0.0.0.0", database: "./x.db" })
    const config = Either.getOrThrow(loadConfig(path, { PORT: "6001", HOST: "::1", DATABASE_URL: ":memory:" }))
    expect(config).toMatchObject({ port: 6001, host: "::1", database: ":memory:" })
  })

  test("the demo catalog follows the vertical to where it runs, and its origin is always probed", () => {
    const path = writeConfig("vertical.json", { vertical: { port: 5555, name: "intel" } })
    const config = Either.getOrThrow(loadConfig(path, {}))
    const inspect = config.catalog.find((e) => e.resource.id === "stellar-intel.rwa.inspect")!
    expect(inspect.resource.url).toBe("http://127.0.0.1:5555/intel/v1/rwa/inspect")
    expect(config.probes.trustedOrigins).toContain("http://127.0.0.1:5555")
    const others = config.catalog.filter((e) => e.provider.id !== "stellar-intel")
    for (const e of others) expect(e.resource.url).not.toContain(":5555")
  })

  test("a catalog path is resolved relative to the config file, and read at start (test/catalogLoad.test.ts)", () => {
    const path = writeConfig("with-catalog.json", { catalog: "catalog.json" })
    const config = Either.getOrThrow(loadConfig(path, {}))
    expect(config.catalogFile).toBe(join(dirname(path), "catalog.json"))
    expect(config.catalog).toEqual([])
  })

  // Each bad config through the loader, in process: `sextant serve` prints exactly `left.line`
  // and a newline, then exits 2 (main.ts `loadOrExit`); the test after this loop proves that once.
  for (const [name, content, field] of BAD_CONFIGS) {
    test(`${name}: start-up stops with one line naming ${field}`, () => {
      const path = writeConfig(`${name.replace(/\W+/g, "-")}.json`, content)
      const result = loadConfig(path, { PORT: "0" })
      if (Either.isRight(result)) throw new Error(`${name}: the config loaded`)
      const lines = `${result.left.line}\n`.trim().split("\n")
      expect(lines.length).toBe(1)
      expect(lines[0]!.startsWith(`config error: ${field}`)).toBe(true)
    })
  }

  test("a bad config file stops `sextant serve` with exit 2 and exactly one line naming the field", async () => {
    const [name, content, field] = BAD_CONFIGS[0]!
    const path = writeConfig(`serve-${name.replace(/\W+/g, "-")}.json`, content)
    const { code, stderr } = await serveUntilExit(path)
    expect(code).toBe(2)
    const lines = stderr.trim().split("\n")
    expect(lines.length).toBe(1)
    expect(lines[0]!.startsWith(`config error: ${field}`)).toBe(true)
  })

  test("secrets never appear in config errors", () => {
    const badUrl = loadConfig(undefined, { DATABASE_URL: "postgres://user:SuperSecretPw@host:99999/db" })
    expect(Either.isLeft(badUrl) && badUrl.left.line).toStartWith("config error: database:")
    expect(JSON.stringify(badUrl)).not.toContain("SuperSecretPw")
    const badKey = loadConfig(
      writeConfig("key.json", { facilitators: [{ id: "a", url: "http://127.0.0.1:1", apiKey: 12345 }] }),
      {}
    )
    expect(Either.isLeft(badKey) && badKey.left.line).toStartWith("config error: facilitators[0].apiKey:")
    expect(JSON.stringify(badKey)).not.toContain("12345")
  })

  test("ledger endpoints default to the testnet public ones, and the vertical reads through them", () => {
    const config = Either.getOrThrow(loadConfig(undefined, {}))
    expect(config.ledger).toEqual({
      sorobanRpcUrl: "https://soroban-testnet.stellar.org",
      horizonUrl: "https://horizon-testnet.stellar.org",
      confirmTimeoutSeconds: 120,
      timeoutMs: 8000,
      inclusionFeeStroops: 10_000,
      pollIntervalSeconds: 5
    })
    expect(config.vertical).toMatchObject({
      sorobanRpcUrl: "https://soroban-testnet.stellar.org",
      horizonUrl: "https://horizon-testnet.stellar.org"
    })
  })

  test("the vertical follows a configured ledger unless it names its own endpoints", () => {
    const ledger = {
      sorobanRpcUrl: "http://127.0.0.1:7001",
      horizonUrl: "http://127.0.0.1:7002",
      confirmTimeoutSeconds: 30
    }
    const following = Either.getOrThrow(loadConfig(writeConfig("ledger.json", { ledger }), {}))
    expect(following.ledger).toEqual({
      ...ledger,
      timeoutMs: 8000,
      inclusionFeeStroops: 10_000,
      pollIntervalSeconds: 5
    })
    expect(following.vertical).toMatchObject({
      sorobanRpcUrl: "http://127.0.0.1:7001",
      horizonUrl: "http://127.0.0.1:7002"
    })
    const own = Either.getOrThrow(
      loadConfig(
        writeConfig("ledger-own.json", {
          ledger,
          vertical: { horizonUrl: "http://127.0.0.1:7003", sorobanRpcUrl: null }
        }),
        {}
      )
    )
    expect(own.vertical).toMatchObject({ horizonUrl: "http://127.0.0.1:7003", sorobanRpcUrl: "http://127.0.0.1:7001" })
    expect(own.ledger.horizonUrl).toBe("http://127.0.0.1:7002")
  })

  test("pubnet defaults Horizon to SDF's and takes the operator's RPC", () => {
    const pubnet = {
      network: "stellar:pubnet",
      asset: {
        network: "stellar:pubnet",
        assetContract: "CCW67TSZV3SSS2HXMBQ5JFGCKJNXKZM7UQUWUZPUTHXSTZLEO7SJMI75",
        symbol: "USDC",
        decimals: 7,
        minimumAmount: "1",
        maximumAmount: "10000000000"
      },
      catalog: [],
      ledger: { sorobanRpcUrl: "https://rpc.provider.example/v1/key" }
    }
    const config = Either.getOrThrow(loadConfig(writeConfig("pubnet.json", pubnet), {}))
    expect(config.ledger).toMatchObject({
      sorobanRpcUrl: "https://rpc.provider.example/v1/key",
      horizonUrl: "https://horizon.stellar.org"
    })
    expect(config.vertical.horizonUrl).toBe("https://horizon.stellar.org")
    // Mainnet's embedded facilitator signs with its own account, never the testnet key.
    expect(config.facilitators).toMatchObject([
      { type: "stellar", network: "stellar:pubnet", feeAccountKeyFile: "./data/facilitator-pubnet.key" }
    ])
  })

  test("an embedded facilitator on another network than the service is a config error naming the field", () => {
    const result = loadConfig(
      writeConfig("embedded-other.json", {
        facilitators: [{ id: "e", type: "stellar", network: "stellar:pubnet", feeAccountKeyFile: "./k" }]
      }),
      {}
    )
    expect(Either.isLeft(result) && result.left.line).toStartWith("config error: facilitators[0].network:")
  })

  test("a bad ledger URL is named without quoting it: a provider's URL may carry its key", () => {
    const result = loadConfig(
      writeConfig("ledger-secret.json", { ledger: { sorobanRpcUrl: "wss://rpc.example/KEY-SECRET-987" } }),
      {}
    )
    expect(Either.isLeft(result) && result.left.line).toStartWith("config error: ledger.sorobanRpcUrl:")
    expect(JSON.stringify(result)).not.toContain("KEY-SECRET-987")
  })

  test("a bad PORT is named", () => {
    const result = loadConfig(undefined, { PORT: "eighty" })
    expect(Either.isLeft(result) && result.left.line).toContain("PORT")
  })
})
