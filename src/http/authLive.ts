import { Effect, Layer, Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { AppConfig } from "../config.js"
import { Unauthorized } from "../domain/errors.js"
import { ApiKeyAuth } from "./auth.js"

const sha256 = (text: string) => createHash("sha256").update(text).digest()

/** Keys are stored only as sha256; every listed hash is compared in constant time, so timing reveals nothing. */
export const ApiKeyAuthLive = Layer.effect(
  ApiKeyAuth,
  Effect.gen(function* () {
    const { apiKeys } = yield* AppConfig
    const entries = apiKeys.map((k) => ({ principal: k.principal, role: k.role ?? "buyer", digest: Buffer.from(k.sha256, "hex") }))
    return {
      bearer: (token) => {
        if (entries.length === 0) return Effect.succeed({ id: null, role: "buyer" as const })
        const presented = sha256(Redacted.value(token))
        let principal: { readonly id: string; readonly role: "operator" | "buyer" } | null = null
        for (const entry of entries) {
          if (timingSafeEqual(entry.digest, presented)) principal = { id: entry.principal, role: entry.role }
        }
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
  bearer: () => Effect.succeed({ id: "local-operator", role: "operator" as const })
})
