/**
 * Receipt signing throughput, `bun bench/receipts.ts` (about 15 s).
 *
 * 1. Raw Ed25519 signatures per second over the canonical bytes of a real receipt, with
 *    node:crypto, WebCrypto and @noble/ed25519 (its synchronous API, SHA-512 from node:crypto),
 *    each signature checked by node:crypto so all three are known to interoperate.
 * 2. Receipts per second end to end through ReceiptService on a SQLite file: validate, route
 *    (the fixed catalog router of the tests, so routing cost stays out), build, canonicalise,
 *    sign, store durably. Printed as a ratio to raw node:crypto signing measured in the same run.
 */

import { createHash, generateKeyPairSync, sign, verify } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as noble from "@noble/ed25519"
import { Effect, Either, ManagedRuntime } from "effect"
import type { CreateReceiptRequest } from "../src/domain/receipts.js"
import { canonicalBytes } from "../src/encoding/canonicalJson.js"
import { ReceiptService } from "../src/receipts/ReceiptService.js"
import { signedBody } from "../src/receipts/receipt.js"
import { Signer } from "../src/receipts/Signer.js"
import { receiptServiceLayer, recordingEvidence } from "../test/receiptsFixtures.js"

/** Raw signers run in interleaved rounds and report their median, so load from other processes hits all alike. */
const RAW_ROUNDS = 5
const RAW_ROUND_MS = 400
const END_TO_END_MS = 4000

/** Runs `op` back to back for `ms` after a short warm-up; answers operations per second. */
const measure = async (ms: number, op: () => unknown): Promise<number> => {
  for (let i = 0; i < 50; i++) await op()
  let count = 0
  const start = performance.now()
  while (performance.now() - start < ms) {
    await op()
    count++
  }
  return count / ((performance.now() - start) / 1000)
}

const folder = mkdtempSync(join(tmpdir(), "sextant-bench-receipts-"))
const runtime = ManagedRuntime.make(
  receiptServiceLayer(join(folder, "sextant.db"), Signer.ed25519(join(folder, "signer.key")), recordingEvidence().layer)
)
const purchase: CreateReceiptRequest = {
  request: { capability: "rwa.inspect", optimizeFor: "cheapest", intent: "inspect an RWA issuer before buying" },
  payment: { network: "stellar:testnet", scheme: "exact", asset: "USDC", amount: "5000" },
  response: {
    status: 200,
    body: JSON.stringify({ issuer: "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464" })
  }
}
const create = () => runtime.runPromise(Effect.flatMap(ReceiptService, (s) => s.create(purchase)))

const sample = await create()
// Copied onto a plain ArrayBuffer, which WebCrypto's BufferSource type asks for.
const message = new Uint8Array(Either.getOrThrow(canonicalBytes(signedBody(sample))))

const { privateKey, publicKey } = generateKeyPairSync("ed25519")
const pkcs8 = privateKey.export({ format: "der", type: "pkcs8" })
// The raw 32-byte seed is the tail of the PKCS#8 DER (RFC 8410).
const seed = new Uint8Array(pkcs8.subarray(pkcs8.length - 32))
const webKey = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, false, ["sign"])
noble.hashes.sha512 = (m) => new Uint8Array(createHash("sha512").update(m).digest())

const signers: ReadonlyArray<readonly [string, () => Uint8Array | Promise<ArrayBuffer>]> = [
  ["node:crypto", () => sign(null, message, privateKey)],
  ["WebCrypto", () => crypto.subtle.sign("Ed25519", webKey, message)],
  ["@noble/ed25519", () => noble.sign(message, seed)]
]
for (const [name, op] of signers) {
  if (!verify(null, message, publicKey, new Uint8Array(await op())))
    throw new Error(`${name} signature does not verify`)
}

const rounds = new Map<string, Array<number>>(signers.map(([name]) => [name, []]))
for (let round = 0; round < RAW_ROUNDS; round++) {
  for (const [name, op] of signers) rounds.get(name)!.push(await measure(RAW_ROUND_MS, op))
}
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const rates = new Map([...rounds].map(([name, xs]) => [name, median(xs)] as const))
const endToEnd = await measure(END_TO_END_MS, create)
await runtime.dispose()

const baseline = rates.get("node:crypto")!
const row = (label: string, perSecond: number) =>
  `${label.padEnd(40)} ${perSecond.toFixed(0).padStart(8)}/s   ${(perSecond / baseline).toFixed(3).padStart(7)} x node:crypto`
console.log(`Ed25519 over a ${message.length}-byte receipt body (${navigator.userAgent})`)
for (const [name, perSecond] of rates) console.log(row(`raw sign, ${name}`, perSecond))
console.log(row("receipts built+signed+stored (SQLite)", endToEnd))
const fastest = [...rates.entries()].sort((a, b) => b[1] - a[1])[0]![0]
console.log(`fastest raw signer: ${fastest}; the live Signer uses node:crypto`)
