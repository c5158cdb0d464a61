import { describe, expect, test } from "bun:test"
import { generateKeyPairSync } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { StrKey } from "@stellar/stellar-sdk"
import { Effect } from "effect"
import { ReceiptService } from "../src/receipts/ReceiptService.js"
import { Signer } from "../src/receipts/Signer.js"
import { receiptServiceLayer, recordingEvidence } from "./receiptsFixtures.js"
import { runCli } from "./support/cli.js"
import { it } from "./support/effectTest.js"

const folder = mkdtempSync(join(tmpdir(), "sextant-cli-"))

const receipt = await it.run(
  Effect.flatMap(ReceiptService, (s) =>
    s.create({
      request: { capability: "rwa.eligibility", intent: "can this wallet hold the asset?" },
      payment: {
        network: "stellar:testnet",
        scheme: "exact",
        asset: "USDC",
        amount: "5000",
        transactionHash: "c".repeat(64)
      },
      response: { status: 200, body: '{"eligible":true}' }
    })
  ).pipe(
    Effect.provide(
      receiptServiceLayer(":memory:", Signer.ed25519(join(folder, "signer.key")), recordingEvidence().layer)
    )
  )
)

const file = (name: string, content: string) => {
  const path = join(folder, name)
  writeFileSync(path, content)
  return path
}

/** Runs `sextant receipt verify ...` through the command definition, capturing its two streams. */
const verify = async (...argv: Array<string>) => {
  const { code, out, err } = await runCli("receipt", "verify", ...argv)
  expect(out).toHaveLength(1)
  return { code, result: JSON.parse(out[0]!) as Record<string, unknown>, err }
}

describe("sextant receipt verify", () => {
  const valid = file("receipt.json", JSON.stringify(receipt, null, 2))
  const otherKey = Buffer.from(generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" }).x!, "base64url")

  test("a receipt as issued verifies offline: exit 0 and one JSON line", async () => {
    const { code, result } = await verify(valid)
    expect(code).toBe(0)
    expect(result).toEqual({
      file: valid,
      receiptId: receipt.receiptId,
      valid: true,
      algorithm: "ed25519",
      signer: receipt.serviceSigner,
      reason: "ed25519 signature verified"
    })
  })

  test("the service's key given as base64 or as a G... address also verifies", async () => {
    const gAddress = StrKey.encodeEd25519PublicKey(Buffer.from(receipt.serviceSigner, "base64"))
    expect((await verify(valid, "--public-key", receipt.serviceSigner)).code).toBe(0)
    expect((await verify(`--public-key=${gAddress}`, valid)).code).toBe(0)
  })

  test("a tampered receipt exits 1 with the reason", async () => {
    const tampered = file("tampered.json", JSON.stringify({ ...receipt, payment: { ...receipt.payment, amount: "1" } }))
    const { code, result } = await verify(tampered)
    expect(code).toBe(1)
    expect(result).toMatchObject({ valid: false, reason: "the signature does not match the receipt's canonical bytes" })
  })

  test("a receipt nested 20,000 levels deep exits 1 with the reason, instead of overflowing the stack", async () => {
    let intent: unknown = receipt.request.intent
    for (let i = 0; i < 20_000; i++) intent = { intent }
    const deep = file("deep.json", JSON.stringify({ ...receipt, request: { ...receipt.request, intent } }))
    const { code, result } = await verify(deep)
    expect(code).toBe(1)
    expect(result).toMatchObject({ valid: false })
    expect(String(result.reason)).toContain("nested deeper than 64 levels")
  })

  test("a different trusted key exits 1, even when the receipt names that key", async () => {
    const wrongKey = await verify(valid, "--public-key", otherKey.toString("base64"))
    expect(wrongKey.code).toBe(1)
    expect(wrongKey.result.reason).toContain("not the expected signer")
    const relabelled = file(
      "relabelled.json",
      JSON.stringify({ ...receipt, serviceSigner: otherKey.toString("base64") })
    )
    expect((await verify(relabelled, "--public-key", otherKey.toString("base64"))).code).toBe(1)
  })

  test("a missing file, a file that is not JSON and bad arguments exit 2", async () => {
    const missing = await verify(join(folder, "nope.json"))
    expect(missing).toMatchObject({ code: 2, result: { error: "UNREADABLE" } })
    expect(String(missing.result.message)).toContain("ENOENT")
    expect((await verify(file("text.json", "receipt?"))).result).toMatchObject({ error: "UNREADABLE" })
    expect(await verify(valid, "--public-key", "abc")).toMatchObject({
      code: 2,
      result: { error: "USAGE", message: expect.stringContaining("--public-key") }
    })
    // A command line the definition refuses: nothing verified, nothing on stdout, one USAGE line last on stderr.
    for (const argv of [[], [valid, valid], [valid, "--public-key"], [valid, "--verbose"]]) {
      const { code, out, err } = await runCli("receipt", "verify", ...argv)
      expect({ argv, code, out, error: JSON.parse(err.at(-1)!).error }).toEqual({
        argv,
        code: 2,
        out: [],
        error: "USAGE"
      })
    }
  })
})
