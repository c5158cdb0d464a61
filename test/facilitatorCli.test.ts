import { afterAll, describe, expect, test } from "bun:test"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Keypair } from "@stellar/stellar-sdk"
import { channelKeypair } from "../src/facilitator/channels.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { runCli } from "./support/cli.js"

const ledger = startFixtureLedger({ network: { closeEveryMs: 100 } })
afterAll(() => ledger.stop())

const configWith = (keyFile: string, channels: number) => {
  const path = join(mkdtempSync(join(tmpdir(), "sextant-fcli-")), "config.json")
  writeFileSync(
    path,
    JSON.stringify({
      facilitators: [
        {
          id: "own",
          type: "stellar",
          network: "stellar:testnet",
          feeAccountKeyFile: keyFile,
          channels,
          pollIntervalMs: 50
        }
      ],
      ledger: { sorobanRpcUrl: ledger.rpcUrl, horizonUrl: ledger.horizonUrl }
    })
  )
  return path
}

describe("sextant keys facilitator-new and sextant facilitator channels", () => {
  test("facilitator-new creates the fee key (0600) and prints only its address; run again, the same address", async () => {
    const keyFile = join(mkdtempSync(join(tmpdir(), "sextant-fee-")), "facilitator.key")
    const config = configWith(keyFile, 2)
    const first = await runCli("keys", "facilitator-new", "--config", config)
    expect(first.code).toBe(0)
    const seed = readFileSync(keyFile, "utf8").trim()
    expect(first.out).toEqual([Keypair.fromSecret(seed).publicKey()])
    expect(first.err.join("\n")).toContain("created the fee account key")
    expect([...first.out, ...first.err].join("\n")).not.toContain(seed)
    expect((await runCli("keys", "facilitator-new", "--config", config)).out).toEqual(first.out)
  })

  test("channels creates the missing channel accounts from the fee account, tops them up, and --merge merges them back", async () => {
    const fee = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 91))
    const keyFile = join(mkdtempSync(join(tmpdir(), "sextant-fee-")), "facilitator.key")
    writeFileSync(keyFile, `${fee.secret()}\n`, { mode: 0o600 })
    const config = configWith(keyFile, 3)
    const channels = [0, 1, 2].map((i) => channelKeypair(fee, i).publicKey())
    ledger.network.setStrictAccounts()
    ledger.network.setAccount(fee.publicKey(), { sequence: 100n, balance: 1_000_000_000n })
    ledger.network.setAccount(channels[1]!, { sequence: 5n, balance: 10_000_000n })

    const created = await runCli("facilitator", "channels", "--xlm", "5", "--config", config)
    expect(created.code).toBe(0)
    const lines = created.out.map((l) => JSON.parse(l))
    expect(lines.slice(0, 3)).toEqual([
      { channel: channels[0], action: "create", xlm: "5.0000000" },
      { channel: channels[1], action: "topUp", xlm: "4.0000000" },
      { channel: channels[2], action: "create", xlm: "5.0000000" }
    ])
    expect(lines.at(-1)).toMatchObject({
      facilitator: "own",
      feeAccount: fee.publicKey(),
      channels: 3,
      changed: 3,
      failed: 0
    })
    for (const channel of channels) expect(ledger.network.account(channel)?.balance).toBe(50_000_000n)
    expect(ledger.network.accepted.at(-1)).toMatchObject({ source: fee.publicKey(), feeSource: fee.publicKey() })

    const again = await runCli("facilitator", "channels", "--config", config)
    expect(again.out.at(-1)).toContain('"changed":0')

    const merged = await runCli("facilitator", "channels", "--merge", "--config", config)
    expect(merged.code).toBe(0)
    for (const channel of channels) expect(ledger.network.account(channel)).toBeNull()
  })
})
