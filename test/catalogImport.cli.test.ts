import { Database } from "bun:sqlite"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { type DiscoveryServiceFixture, ITEM_COUNT, isKept, startDiscoveryService } from "./fixtures/discoveryService.js"
import { childEnv } from "./support/serveProcess.js"

const ROOT = resolve(import.meta.dir, "..")
let service: DiscoveryServiceFixture
let dir: string
let configPath: string

beforeAll(() => {
  // Resource URLs point at an origin nothing listens on: the CLI only imports, it never probes.
  service = startDiscoveryService("http://127.0.0.1:9")
  dir = mkdtempSync(join(tmpdir(), "sextant-import-cli-"))
  configPath = join(dir, "config.json")
  writeFileSync(
    configPath,
    JSON.stringify({
      database: join(dir, "sextant.db"),
      catalog: [],
      vertical: { enabled: false },
      signer: { ed25519KeyFile: join(dir, "signer.key") },
      catalogSources: [{ id: "bazaar-fixture", url: service.url, intervalSeconds: 3600 }],
      // The fixture serves every item from one origin to one payee: above the default quotas.
      ingestion: { maxPerOrigin: 5000, maxPerPayee: 5000 }
    })
  )
})
afterAll(() => service.stop())

/** Asynchronous: the fixture service runs in this process and must keep answering while the child pulls. */
const cli = async (...args: Array<string>) => {
  const child = Bun.spawn([process.execPath, "src/main.ts", "catalog", "import", ...args, "--config", configPath], {
    cwd: ROOT,
    env: childEnv(),
    stdout: "pipe",
    stderr: "pipe"
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited
  ])
  return { code, stdout, stderr }
}

const importedCount = (source: string) => {
  const db = new Database(join(dir, "sextant.db"), { readonly: true })
  const row = db.query("SELECT COUNT(*) AS n FROM resources WHERE source = ? AND listed = 0").get(source) as {
    n: number
  }
  db.close()
  return row.n
}

describe("sextant catalog import", () => {
  test("imports once from a URL under the configured source's id, with a progress bar on stderr and a summary on stdout", async () => {
    const { code, stdout, stderr } = await cli(service.url)
    expect(code).toBe(0)
    const kept = Array.from({ length: ITEM_COUNT }, (_, i) => i).filter(isKept).length
    expect(JSON.parse(stdout)).toMatchObject({ source: "import:bazaar-fixture", items: ITEM_COUNT, kept, pages: 25 })
    expect(stderr).toContain("import:bazaar-fixture [")
    expect(stderr).toContain(`${ITEM_COUNT}/${ITEM_COUNT} items`)
    expect(importedCount("import:bazaar-fixture")).toBe(kept)
  })

  test("imports from a file of items under --id", async () => {
    const file = join(dir, "items.json")
    const items = [0, 1, 2, 3, 4, 9].map((i) => ({
      resource: `http://127.0.0.1:9/file/${i}`,
      type: "http",
      x402Version: 2,
      lastUpdated: i % 2 === 0 ? 1763640000 : "2026-11-20T12:00:00Z",
      accepts: [
        {
          scheme: "exact",
          network: i % 3 === 0 ? "stellar:testnet" : "eip155:8453",
          amount: "10000",
          asset: "CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA",
          payTo: "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464",
          maxTimeoutSeconds: 60
        }
      ]
    }))
    writeFileSync(file, JSON.stringify({ x402Version: 2, items }))
    const { code, stdout } = await cli(file, "--id", "from-file")
    expect(code).toBe(0)
    expect(JSON.parse(stdout)).toMatchObject({ source: "import:from-file", items: 6, kept: 3, skippedOtherNetwork: 3 })
    expect(importedCount("import:from-file")).toBe(3)
  })

  test("an unreachable source fails with exit 1 and one line; bad arguments exit 2", async () => {
    const failed = await cli("http://127.0.0.1:9/")
    expect(failed.code).toBe(1)
    expect(failed.stderr).toContain("import from cli failed")
    expect(failed.stdout).toBe("")
    const bad = await cli(service.url, "--bogus")
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("--bogus")
  })
})
