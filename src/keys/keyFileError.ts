import { Data } from "effect"

/**
 * A key file could not be read, created or understood: a Stellar secret seed (the probe, buyer or
 * facilitator key) or a seller's Ed25519 key. Names the config field and the file, never the content.
 */
export class KeyFileError extends Data.TaggedError("KeyFileError")<{
  /** The config field the path came from (`economicProbes.payerKeyFile`, `buyer.keyFile`, `vertical.offerKeyFile`). */
  readonly field: string
  readonly path: string
  readonly reason: string
}> {
  override get message() {
    return `${this.field}: ${this.path}: ${this.reason}`
  }
}
