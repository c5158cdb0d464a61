import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Keypair } from "@stellar/stellar-sdk"
import { Effect, Either, type Scope } from "effect"
import {
  type Config,
  DEFAULT_EMBEDDED,
  type EmbeddedFacilitator,
  type FacilitatorEntry,
  loadConfig
} from "../../src/config.js"
import { channelKeypair } from "../../src/facilitator/channels.js"
import { Instruments } from "../../src/telemetry/Instruments.js"
import { makeEmbeddedBackend } from "../../src/x402/embedded.js"
import type { FixtureLedger } from "../fixtures/ledger.js"

/** A fee account key written to a fresh folder: tests know its address and can derive its channels. */
export const feeKeyFile = (seed = 21) => {
  const dir = mkdtempSync(join(tmpdir(), "sextant-fee-"))
  const keypair = Keypair.fromRawEd25519Seed(Buffer.alloc(32, seed))
  const path = join(dir, "facilitator.key")
  writeFileSync(path, `${keypair.secret()}\n`, { mode: 0o600 })
  return { path, keypair, channel: (i: number) => channelKeypair(keypair, i) }
}

/** An embedded backend entry over `keyFile`. */
export const embeddedEntry = (keyFile: string, overrides: Partial<EmbeddedFacilitator> = {}): EmbeddedFacilitator => ({
  ...DEFAULT_EMBEDDED,
  id: "embedded",
  feeAccountKeyFile: keyFile,
  pollIntervalMs: 50,
  ...overrides
})

/** The default config with `facilitators` and the ledger pointed at the fixture. */
export const configFor = (
  ledger: FixtureLedger,
  facilitators: ReadonlyArray<FacilitatorEntry>,
  overrides: Partial<Config> = {}
): Config => {
  const base = Either.getOrThrow(loadConfig(undefined, {}))
  return {
    ...base,
    facilitators,
    ledger: { ...base.ledger, sorobanRpcUrl: ledger.rpcUrl, horizonUrl: ledger.horizonUrl, timeoutMs: 3000 },
    ...overrides
  }
}

/** Runs `use` with one embedded backend built from the config's first entry. */
export const withEmbedded = <A>(
  config: Config,
  use: (
    backend: Effect.Effect.Success<ReturnType<typeof makeEmbeddedBackend>>
  ) => Effect.Effect<A, unknown, Scope.Scope>
) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const instruments = yield* Instruments
        const backend = yield* makeEmbeddedBackend(
          config.facilitators[0] as EmbeddedFacilitator,
          0,
          config,
          instruments
        )
        return yield* use(backend)
      })
    )
  )
