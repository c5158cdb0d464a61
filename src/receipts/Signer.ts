import { sign } from "node:crypto"
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config.js"
import type { SignatureAlgorithm } from "../domain/receipts.js"
import { encodeBase64, rawPublicKey, verifyEd25519 } from "./ed25519.js"
import { hmacMatches, hmacSha256, hmacSignerId } from "./hmac.js"
import { loadOrCreateSigningKey, type SignerKeyError } from "./keyFile.js"

export interface SignerShape {
  readonly algorithm: SignatureAlgorithm
  /** Raw 32-byte Ed25519 public key; null in HMAC mode, which has nothing public. */
  readonly publicKey: Uint8Array | null
  /** What a receipt's `serviceSigner` holds: the base64 public key, or the HMAC key id. */
  readonly signerId: string
  readonly sign: (message: Uint8Array) => Effect.Effect<Uint8Array>
  readonly verify: (message: Uint8Array, signature: Uint8Array) => Effect.Effect<boolean>
}

/**
 * Signs receipt bytes. The private key or secret stays inside the layer: nothing here returns,
 * logs or formats it.
 */
export class Signer extends Context.Tag("sextant/Signer")<Signer, SignerShape>() {
  /**
   * Ed25519 through node:crypto, the fastest of node:crypto, WebCrypto and @noble/ed25519 in Bun
   * (bench/receipts.ts prints the three). The key file is created on first start.
   */
  static readonly ed25519 = (keyFile: string): Layer.Layer<Signer, SignerKeyError> =>
    Layer.effect(
      Signer,
      Effect.gen(function* () {
        const key = yield* loadOrCreateSigningKey(keyFile)
        if (key.created) yield* Effect.logInfo(`generated a new Ed25519 receipt signing key at ${key.path}`)
        if (key.exposed) yield* Effect.logWarning(`${key.path} is readable by group or others; chmod 600 it`)
        const publicKey = rawPublicKey(key.privateKey)
        return {
          algorithm: "ed25519",
          publicKey,
          signerId: encodeBase64(publicKey),
          sign: (message) => Effect.sync(() => new Uint8Array(sign(null, message, key.privateKey))),
          verify: (message, signature) => Effect.sync(() => verifyEd25519(publicKey, message, signature))
        } satisfies SignerShape
      })
    )

  /** HMAC-SHA256 with a shared secret: receipts only this service can check. */
  static readonly hmac = (secret: string): Layer.Layer<Signer> =>
    Layer.succeed(Signer, {
      algorithm: "hmac-sha256",
      publicKey: null,
      signerId: hmacSignerId(secret),
      sign: (message) => Effect.sync(() => hmacSha256(secret, message)),
      verify: (message, mac) => Effect.sync(() => hmacMatches(secret, message, mac))
    })

  /** `signer.ed25519KeyFile` (the default, `./data/signer.key`) or `signer.hmacSecret`, as configured. */
  static readonly fromConfig: Layer.Layer<Signer, SignerKeyError, AppConfig> = Layer.unwrapEffect(
    Effect.map(AppConfig, ({ signer }) =>
      "ed25519KeyFile" in signer ? Signer.ed25519(signer.ed25519KeyFile) : Signer.hmac(signer.hmacSecret)
    )
  )
}
