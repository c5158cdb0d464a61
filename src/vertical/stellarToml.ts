import { Effect, Either } from "effect"
import { parse as parseToml } from "smol-toml"
import { describeFailure as describe } from "../ledger/clients.js"
import { fetchText } from "../outbound/fetchAnswer.js"
import { homeDomainTarget } from "./homeDomain.js"
import type { StellarDataConfig } from "./StellarData.js"
import type { TomlLookup } from "./upstream.js"

/** The SDK resolver's own limit on a stellar.toml. */
const STELLAR_TOML_MAX_BYTES = 100 * 1024

/**
 * The issuer's stellar.toml through the Connector, as a probe reaches a resource: the address
 * checked and pinned, redirects each checked, the SDK's own size limit (100 KiB) and the upstream
 * timeout. The SDK's resolver would resolve the name again with its own fetch.
 */
export const readStellarToml =
  (config: Pick<StellarDataConfig, "timeoutMs" | "allowPrivateHomeDomains">) =>
  (homeDomain: string): Effect.Effect<TomlLookup> =>
    Effect.flatMap(homeDomainTarget(homeDomain, config.allowPrivateHomeDomains), (target) => {
      if ("skip" in target) return Effect.succeed<TomlLookup>({ status: "skipped", reason: target.skip })
      const url = `${target.allowHttp ? "http" : "https"}://${homeDomain}/.well-known/stellar.toml`
      const outbound = {
        allowPrivateTargets: config.allowPrivateHomeDomains,
        trustedOrigins: [],
        timeoutMs: config.timeoutMs,
        maxBodyBytes: STELLAR_TOML_MAX_BYTES
      }
      // A body that is not TOML is kept apart from a missing one; the document stays inside the
      // Either, so nothing the issuer writes in it can pass for the refusal.
      const parsed = (text: string) => Either.try({ try: () => parseToml(text), catch: describe })
      return fetchText(url, outbound, STELLAR_TOML_MAX_BYTES, parsed).pipe(
        Effect.mapError((e) => e.reason),
        Effect.flatMap((answer) => {
          if (answer.httpStatus < 200 || answer.httpStatus >= 300) return Effect.fail(`HTTP ${answer.httpStatus}`)
          if (answer.note !== null) return Effect.fail(answer.note)
          const body = Either.isEither(answer.body) ? answer.body : Either.right(answer.body)
          if (Either.isLeft(body)) return Effect.fail(`stellar.toml is invalid: ${body.left}`)
          return typeof body.right === "object" && body.right !== null
            ? Effect.succeed(body.right as Record<string, unknown>)
            : Effect.fail("stellar.toml is empty")
        }),
        Effect.match({
          onFailure: (reason): TomlLookup => ({ status: "unavailable", url, reason }),
          onSuccess: (document): TomlLookup => ({ status: "published", url, document: { ...document } })
        })
      )
    })
