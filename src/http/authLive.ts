import { createHash, timingSafeEqual } from "node:crypto"
import { Effect, Layer, Redacted } from "effect"
import { type ApiKeyEntry, AppConfig } from "../config.js"
import { ApiKeyAuth } from "../contract/auth.js"
import { Unauthorized } from "../domain/errors.js"
import { PrincipalId } from "../domain/ids.js"

const sha256 = (text: string) => createHash("sha256").update(text).digest()

/** What `apiKeys[].sha256` holds for a key: `sextant keys hash` prints it, and lookups compare it. */
export const apiKeyHash = (key: string) => sha256(key).toString("hex")

type KeyPrincipal = { readonly id: PrincipalId; readonly role: "operator" | "buyer" }

/**
 * The principal whose configured key `token` is, or null. Keys are stored only as sha256; every
 * listed hash is compared in constant time, so timing reveals nothing.
 */
export const keyLookup = (apiKeys: ReadonlyArray<ApiKeyEntry>) => {
  const entries = apiKeys.map((k) => ({
    principal: PrincipalId.make(k.principal),
    role: k.role ?? "buyer",
    digest: Buffer.from(k.sha256, "hex")
  }))
  return (token: string): KeyPrincipal | null => {
    const presented = sha256(token)
    let principal: KeyPrincipal | null = null
    for (const entry of entries) {
      if (timingSafeEqual(entry.digest, presented)) principal = { id: entry.principal, role: entry.role }
    }
    return principal
  }
}

export const ApiKeyAuthLive = Layer.effect(
  ApiKeyAuth,
  Effect.gen(function* () {
    const { apiKeys } = yield* AppConfig
    const lookup = keyLookup(apiKeys)
    return {
      bearer: (token) => {
        if (apiKeys.length === 0) return Effect.succeed({ id: null, role: "buyer" as const })
        const principal = lookup(Redacted.value(token))
        return principal === null
          ? Effect.fail(
              new Unauthorized({
                message: "this endpoint needs Authorization: Bearer <api key> with a configured key"
              })
            )
          : Effect.succeed(principal)
      }
    }
  })
)

/** The operator's own local process (the MCP server on stdio): trusted, named, never keyed, an operator. */
export const LocalOperatorAuth = Layer.succeed(ApiKeyAuth, {
  bearer: () => Effect.succeed({ id: PrincipalId.make("local-operator"), role: "operator" as const })
})
