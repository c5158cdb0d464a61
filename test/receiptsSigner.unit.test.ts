import { describe, expect } from "bun:test"
import { generateKeyPairSync } from "node:crypto"
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { StrKey } from "@stellar/stellar-sdk"
import { Effect, Either, Exit, Layer, Logger } from "effect"
import { AppConfig, loadConfig } from "../src/config.js"
import { ReceiptService } from "../src/receipts/ReceiptService.js"
import { verifyReceipt } from "../src/receipts/receipt.js"
import { Signer } from "../src/receipts/Signer.js"
import { receiptServiceLayer, recordingEvidence } from "./receiptsFixtures.js"
import { it } from "./support/effectTest.js"

const temp = () => mkdtempSync(join(tmpdir(), "sextant-signer-"))
const SECRET = "correct horse battery staple, but longer"
const message = new TextEncoder().encode('{"receiptId":"r1"}')

const signerOf = <E>(layer: Layer.Layer<Signer, E>) => Effect.provide(Signer, layer)

const purchase = {
  request: { capability: "rwa.changes" },
  payment: { network: "stellar:testnet", scheme: "exact", asset: "USDC", amount: "15000" },
  response: { status: 200, body: "ok" }
} as const

describe("Signer", () => {
  it.live("a missing key file is generated as PKCS#8 PEM with mode 0600 in a new folder, and reused on restart", () =>
    Effect.gen(function* () {
      const keyFile = join(temp(), "data", "nested", "signer.key")
      const first = yield* signerOf(Signer.ed25519(keyFile))
      expect(statSync(keyFile).mode & 0o777).toBe(0o600)
      expect(readFileSync(keyFile, "utf8")).toStartWith("-----BEGIN PRIVATE KEY-----")
      const second = yield* signerOf(Signer.ed25519(keyFile))
      expect(second.publicKey).toEqual(first.publicKey!)
      expect(first.publicKey?.length).toBe(32)
      const signature = yield* first.sign(message)
      expect(yield* second.verify(message, signature)).toBe(true)
      expect(yield* second.verify(new TextEncoder().encode("other"), signature)).toBe(false)
    })
  )

  it.live("an operator's key file is used as given; a mode open to others is logged as a warning", () =>
    Effect.gen(function* () {
      const keyFile = join(temp(), "operator.key")
      const { privateKey, publicKey } = generateKeyPairSync("ed25519")
      writeFileSync(keyFile, privateKey.export({ format: "pem", type: "pkcs8" }))
      chmodSync(keyFile, 0o644)
      const logs: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ logLevel, message }) => void logs.push(`${logLevel.label} ${String(message)}`))
      )
      const signer = yield* Effect.provide(Signer, Signer.ed25519(keyFile).pipe(Layer.provide(capture)))
      expect(Buffer.from(signer.publicKey!).toString("base64url")).toBe(publicKey.export({ format: "jwk" }).x!)
      expect(statSync(keyFile).mode & 0o777).toBe(0o644)
      expect(logs).toEqual([`WARN ${keyFile} is readable by group or others; chmod 600 it`])
    })
  )

  it.live("a key file that is not an Ed25519 PKCS#8 key stops start-up with the path and no key material", () =>
    Effect.gen(function* () {
      const folder = temp()
      const rsa = join(folder, "rsa.key")
      const rsaPem = generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey.export({
        format: "pem",
        type: "pkcs8"
      })
      writeFileSync(rsa, rsaPem)
      const garbage = join(folder, "garbage.key")
      writeFileSync(garbage, "not a key at all")
      for (const [file, reason] of [
        [rsa, "holds a rsa key, not ed25519"],
        [garbage, "not a PKCS#8 PEM private key"]
      ] as const) {
        const exit = yield* Effect.exit(Effect.provide(Signer, Signer.ed25519(file)))
        expect(Exit.isFailure(exit)).toBe(true)
        const error = Exit.isFailure(exit) ? JSON.stringify(exit.cause) : ""
        expect(error).toContain(reason)
        expect(error).toContain(file)
        expect(error).not.toContain("PRIVATE KEY")
      }
    })
  )

  it.live("fromConfig picks Ed25519 for ed25519KeyFile and HMAC for hmacSecret", () =>
    Effect.gen(function* () {
      const base = Either.getOrThrow(loadConfig(undefined, {}))
      const keyFile = join(temp(), "k.key")
      const ed = yield* signerOf(
        Signer.fromConfig.pipe(
          Layer.provide(Layer.succeed(AppConfig, { ...base, signer: { ed25519KeyFile: keyFile } }))
        )
      )
      const hmac = yield* signerOf(
        Signer.fromConfig.pipe(Layer.provide(Layer.succeed(AppConfig, { ...base, signer: { hmacSecret: SECRET } })))
      )
      expect([ed.algorithm, hmac.algorithm]).toEqual(["ed25519", "hmac-sha256"])
      expect(statSync(keyFile).isFile()).toBe(true)
      expect(hmac.publicKey).toBeNull()
      expect(hmac.signerId).toMatch(/^hmac-sha256:[0-9a-f]{16}$/)
      expect(hmac.signerId).not.toContain(SECRET)
    })
  )
})

describe("signer modes through ReceiptService", () => {
  it.live("Ed25519 mode discloses the key as base64 and as the matching Stellar G... address", () =>
    Effect.gen(function* () {
      const keyFile = join(temp(), "signer.key")
      const disclosure = yield* Effect.flatMap(ReceiptService, (s) => s.signer()).pipe(
        Effect.provide(receiptServiceLayer(":memory:", Signer.ed25519(keyFile), recordingEvidence().layer))
      )
      expect(disclosure).toMatchObject({ mode: "ed25519", algorithm: "ed25519", offlineVerifiable: true })
      expect(Buffer.from(StrKey.decodeEd25519PublicKey(disclosure.stellarPublicKey!)).toString("base64")).toBe(
        disclosure.publicKey!
      )
      expect(disclosure.serviceSigner).toBe(disclosure.publicKey!)
    })
  )

  it.live("HMAC mode signs receipts only the service can check, and never shows the secret", () =>
    Effect.gen(function* () {
      const program = Effect.gen(function* () {
        const service = yield* ReceiptService
        const receipt = yield* service.create(purchase)
        return { receipt, check: yield* service.verify(receipt.receiptId), disclosure: yield* service.signer() }
      })
      const { receipt, check, disclosure } = yield* Effect.provide(
        program,
        receiptServiceLayer(":memory:", Signer.hmac(SECRET), recordingEvidence().layer)
      )
      expect(receipt.signatureAlgorithm).toBe("hmac-sha256")
      expect(receipt.serviceSigner).toMatch(/^hmac-sha256:[0-9a-f]{16}$/)
      expect(check).toMatchObject({ valid: true, algorithm: "hmac-sha256", signer: receipt.serviceSigner })
      expect(disclosure).toMatchObject({
        mode: "hmac-sha256",
        publicKey: null,
        stellarPublicKey: null,
        offlineVerifiable: false,
        serviceSigner: receipt.serviceSigner
      })
      expect(disclosure.note).toContain("only this service can check")
      expect(JSON.stringify([receipt, check, disclosure])).not.toContain(SECRET)

      const offline = verifyReceipt(receipt)
      expect(offline).toMatchObject({ valid: false, algorithm: "hmac-sha256" })
      expect(offline.reason).toContain("only the issuing service can check")
      expect(verifyReceipt(receipt, { hmacSecret: SECRET }).valid).toBe(true)
      expect(verifyReceipt({ ...receipt, timestamp: "2020-01-01T00:00:00.000Z" }, { hmacSecret: SECRET }).valid).toBe(
        false
      )
      const otherSecret = verifyReceipt(receipt, { hmacSecret: `${SECRET}!` })
      expect(otherSecret.valid).toBe(false)
      expect(otherSecret.reason).toContain("not the expected signer")
    })
  )

  it.live("a receipt from the Ed25519 deployment does not pass the HMAC deployment's check", () =>
    Effect.gen(function* () {
      const database = join(temp(), "shared.db")
      const keyFile = join(temp(), "signer.key")
      const made = yield* Effect.flatMap(ReceiptService, (s) => s.create(purchase)).pipe(
        Effect.provide(receiptServiceLayer(database, Signer.ed25519(keyFile), recordingEvidence().layer))
      )
      const check = yield* Effect.flatMap(ReceiptService, (s) => s.verify(made.receiptId)).pipe(
        Effect.provide(receiptServiceLayer(database, Signer.hmac(SECRET), recordingEvidence().layer))
      )
      expect(check).toMatchObject({
        valid: false,
        algorithm: "ed25519",
        reason: "signed with ed25519, expected hmac-sha256"
      })
    })
  )
})
