import { describe, expect, test } from "bun:test"
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { inspect } from "node:util"
import { Keypair, StrKey } from "@stellar/stellar-sdk"
import { Effect, Redacted } from "effect"
import { loadOrCreateProbeKey } from "../src/keys/stellarKey.js"
import { runCli } from "./support/cli.js"
import { spawnedCli } from "./support/cliProcess.js"
import { it } from "./support/effectTest.js"

const folder = () => mkdtempSync(join(tmpdir(), "sextant-probe-key-"))

describe("loadOrCreateProbeKey", () => {
  it.effect(
    "a missing key file is created 0600 (its folder 0700) holding one S... seed, and the next call reuses it",
    () =>
      Effect.gen(function* () {
        const dir = join(folder(), "nested", "data")
        const path = join(dir, "probe.key")
        const first = yield* loadOrCreateProbeKey(path)
        expect(first.created).toBe(true)
        expect(first.exposed).toBe(false)
        expect(statSync(path).mode & 0o777).toBe(0o600)
        expect(statSync(dir).mode & 0o777).toBe(0o700)
        const seed = readFileSync(path, "utf8")
        expect(seed).toMatch(/^S[A-Z2-7]{55}\n$/)
        expect(Keypair.fromSecret(seed.trim()).publicKey()).toBe(first.address)
        expect(Redacted.value(first.signer).publicKey()).toBe(first.address)

        const second = yield* loadOrCreateProbeKey(path)
        expect(second.created).toBe(false)
        expect(second.address).toBe(first.address)
        expect(readFileSync(path, "utf8")).toBe(seed)
      })
  )

  it.effect("an operator's own seed file is used as is, whitespace around it ignored; a loose mode is reported", () =>
    Effect.gen(function* () {
      const path = join(folder(), "probe.key")
      const own = Keypair.random()
      writeFileSync(path, `  ${own.secret()}\r\n\n`)
      chmodSync(path, 0o644)
      const key = yield* loadOrCreateProbeKey(path)
      expect(key).toMatchObject({ address: own.publicKey(), created: false, exposed: true })
    })
  )

  it.effect("the secret never shows when the key is logged, inspected or serialised", () =>
    Effect.gen(function* () {
      const path = join(folder(), "probe.key")
      const key = yield* loadOrCreateProbeKey(path)
      const secret = readFileSync(path, "utf8").trim()
      // A bare Keypair would leak its raw seed: as a byte array in JSON, as hex bytes when inspected.
      const raw = Buffer.from(Keypair.fromSecret(secret).rawSecretKey())
      const forms = [
        secret,
        JSON.stringify([...raw]).slice(1, -1),
        raw.toString("hex").match(/../g)!.join(" "),
        raw.toString("hex")
      ]
      for (const shown of [JSON.stringify(key), String(key.signer), inspect(key, { depth: 10 }), `${key.signer}`]) {
        for (const form of forms) expect(shown).not.toContain(form)
      }
      expect(JSON.stringify(key)).toContain(key.address)
    })
  )

  it.effect("a file that is not a seed fails with the path and a fixed reason, not its content", () =>
    Effect.gen(function* () {
      const path = join(folder(), "probe.key")
      const content = "SNOTAREALSEEDBUTLOOKSSECRETISH"
      writeFileSync(path, content)
      const error = yield* Effect.flip(loadOrCreateProbeKey(path))
      expect(error._tag).toBe("KeyFileError")
      expect(error.message).toBe(`economicProbes.payerKeyFile: ${path}: not a Stellar secret seed (one line, S...)`)
      expect(JSON.stringify(error)).not.toContain(content)
    })
  )

  it.effect("a key file in a folder that cannot be created fails with the errno", () =>
    Effect.gen(function* () {
      const blocker = join(folder(), "file")
      writeFileSync(blocker, "")
      const error = yield* Effect.flip(loadOrCreateProbeKey(join(blocker, "probe.key")))
      expect(error.reason).toBe("cannot read or create: ENOTDIR")
    })
  )
})

/** `sextant keys probe-address ...` through the command definition, with `keyFile` as the configured payer key file. */
const probeAddress = async (keyFile: string, ...argv: Array<string>) => {
  const config = join(folder(), "config.json")
  writeFileSync(config, JSON.stringify({ economicProbes: { payerKeyFile: keyFile } }))
  return runCli("keys", "probe-address", "--config", config, ...argv)
}

describe("sextant keys probe-address", () => {
  test("prints the G... address of a new key, says it created the file, and never prints the secret", async () => {
    const path = join(folder(), "data", "probe.key")
    const { code, out, err } = await probeAddress(path)
    expect(code).toBe(0)
    expect(out).toHaveLength(1)
    expect(StrKey.isValidEd25519PublicKey(out[0]!)).toBe(true)
    const secret = readFileSync(path, "utf8").trim()
    expect(Keypair.fromSecret(secret).publicKey()).toBe(out[0]!)
    expect(err.join("\n")).toContain("created the probe key")
    expect([...out, ...err].join("\n")).not.toContain(secret)

    const again = await probeAddress(path)
    expect(again).toEqual({ code: 0, out, err: [] })
  })

  test("--key-file overrides the configured path", async () => {
    const dir = folder()
    const own = Keypair.random()
    writeFileSync(join(dir, "mine.key"), own.secret(), { mode: 0o600 })
    expect((await probeAddress(join(dir, "configured.key"), "--key-file", join(dir, "mine.key"))).out).toEqual([
      own.publicKey()
    ])
    expect((await probeAddress(join(dir, "configured.key"), `--key-file=${join(dir, "mine.key")}`)).out).toEqual([
      own.publicKey()
    ])
  })

  test("bad arguments and an unusable key file exit 2 with nothing on stdout", async () => {
    const dir = folder()
    expect(await probeAddress(join(dir, "k"), "--key-file")).toMatchObject({ code: 2, out: [] })
    expect(await probeAddress(join(dir, "k"), "extra")).toMatchObject({ code: 2, out: [] })
    writeFileSync(join(dir, "bad.key"), "hunter2-private-material")
    const bad = await probeAddress(join(dir, "bad.key"))
    expect(bad).toMatchObject({ code: 2, out: [] })
    expect(bad.err.join("\n")).toContain("not a Stellar secret seed")
    expect(bad.err.join("\n")).not.toContain("hunter2")
  })

  test("the sextant binary entry point: `keys probe-address` in a fresh folder creates ./data/probe.key and prints its address only", async () => {
    const dir = folder()
    const { code, stdout, stderr } = await spawnedCli({ cwd: dir })("keys", "probe-address")
    expect(code).toBe(0)
    const secret = readFileSync(join(dir, "data", "probe.key"), "utf8").trim()
    expect(stdout).toBe(`${Keypair.fromSecret(secret).publicKey()}\n`)
    expect(stdout + stderr).not.toContain(secret)
    expect(statSync(join(dir, "data", "probe.key")).mode & 0o777).toBe(0o600)
  })
})
