import { Effect } from "effect"
import { parse as parseToml } from "smol-toml"
import { describeFailure as describe } from "../ledger/clients.js"
import { fetchText } from "../outbound/fetchAnswer.js"
import { homeDomainTarget } from "./homeDomain.js"
import type { StellarDataConfig } from "./StellarData.js"
import type { TomlLookup } from "./upstream.js"

/** The SDK resolver's own limit on a stellar.toml. */
const STELLAR_TOML_MAX_BYTES = 100 * 1024

/** A body that is not TOML, kept apart from a missing one. */
class TomlInvalid {
  constructor(readonly reason: string) {}
}

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
      const parsed = (text: string) => {
        try {
          return parseToml(text)
        } catch (e) {
          return new TomlInvalid(describe(e))
        }
      }
      return fetchText(url, outbound, STELLAR_TOML_MAX_BYTES, parsed).pipe(
        Effect.mapError((e) => e.reason),
        Effect.flatMap((answer) => {
          if (answer.httpStatus < 200 || answer.httpStatus >= 300) return Effect.fail(`HTTP ${answer.httpStatus}`)
          if (answer.note !== null) return Effect.fail(answer.note)
          if (answer.body instanceof TomlInvalid) return Effect.fail(`stellar.toml is invalid: ${answer.body.reason}`)
          return typeof answer.body === "object" && answer.body !== null
            ? Effect.succeed(answer.body as Record<string, unknown>)
            : Effect.fail("stellar.toml is empty")
        }),
        Effect.match({
          onFailure: (reason): TomlLookup => ({ status: "unavailable", url, reason }),
          onSuccess: (document): TomlLookup => ({ status: "published", url, document: { ...document } })
        })
      )
    })
