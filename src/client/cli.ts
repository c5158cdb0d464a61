import { writeFileSync } from "node:fs"
import { Effect, Either, Option, Schema } from "effect"
import type { Config } from "../config.js"
import { BuyRequest, BuyResult } from "../domain/buy.js"
import { describeParseError } from "../domain/issues.js"
import type { CommandOutput } from "../lifecycle/commandOutput.js"
import { Buyer } from "./Buyer.js"
import { attemptsOf, type BuyError, buyErrorCode, buyErrorMessage } from "./errors.js"
import { BuyerClientLive } from "./index.js"

/**
 * Exit codes of `sextant buy`, one per way it ends (documented in the README). A caller can tell
 * "nothing to buy" (3) from "tried and nobody was paid" (4) from "money may have moved" (5, 7).
 */
export const BUY_EXIT = {
  ok: 0,
  internal: 1,
  usage: 2,
  NOTHING_ELIGIBLE: 3,
  ALL_PROVIDERS_FAILED: 4,
  OUTCOME_UNKNOWN: 5,
  SPEND_LIMIT_REACHED: 6,
  PAID_BUT_FAILED: 7,
  SERVICE_UNAVAILABLE: 8,
  SPEND_LEDGER_UNAVAILABLE: 9
} as const

/** What each exit code of `sextant buy` means, with the `error` its stderr line names: for docs/reference/cli.md. */
export const BUY_EXIT_MEANING: {
  readonly [K in keyof typeof BUY_EXIT]: { readonly errors: ReadonlyArray<string>; readonly meaning: string }
} = {
  ok: { errors: [], meaning: "paid once and answered: the data is on stdout" },
  internal: { errors: [], meaning: "an unexpected failure" },
  usage: {
    errors: ["USAGE", "KEY_FILE"],
    meaning: "a bad command line or config, or a missing or unusable key file (nothing requested)"
  },
  NOTHING_ELIGIBLE: {
    errors: ["NOTHING_ELIGIBLE"],
    meaning: "the route has no provider for the capability under the policy (nothing requested)"
  },
  ALL_PROVIDERS_FAILED: {
    errors: ["ALL_PROVIDERS_FAILED"],
    meaning: "every provider was tried and none was paid (each attempt says why)"
  },
  OUTCOME_UNKNOWN: {
    errors: ["OUTCOME_UNKNOWN"],
    meaning: "a signed payment was sent and no answer came: it may have settled; it is not retried"
  },
  SPEND_LIMIT_REACHED: {
    errors: ["SPEND_LIMIT_REACHED"],
    meaning: "the local spend window had no room for any provider (nothing signed)"
  },
  PAID_BUT_FAILED: {
    errors: ["PAID_BUT_FAILED"],
    meaning: "a payment settled but its provider gave no usable answer; no other provider was paid"
  },
  SERVICE_UNAVAILABLE: {
    errors: ["SERVICE_UNAVAILABLE"],
    meaning: "the Sextant service could not route (unreachable, or an error answer)"
  },
  SPEND_LEDGER_UNAVAILABLE: {
    errors: ["SPEND_LEDGER_UNAVAILABLE"],
    meaning: "the local spend ledger could not be opened or written (nothing signed)"
  }
}

interface BuyArgs {
  readonly request: BuyRequest
  readonly keyFile: string
  readonly service: string
  readonly receiptFile: string | undefined
}

const json = (flag: string, text: string | undefined): Either.Either<unknown, string> => {
  if (text === undefined) return Either.right(undefined)
  try {
    return Either.right(JSON.parse(text) as unknown)
  } catch {
    return Either.left(`${flag} is not JSON`)
  }
}

/** The command line of `sextant buy` as @effect/cli parsed it: text still to be checked. */
export interface BuyFlags {
  readonly capability: string
  readonly maxUsd: string
  readonly input: Option.Option<string>
  readonly optimizeFor: Option.Option<string>
  readonly policy: Option.Option<string>
  readonly keyFile: Option.Option<string>
  readonly service: Option.Option<string>
  readonly receiptFile: Option.Option<string>
}

const nonEmpty = (flag: Option.Option<string>) => Option.filter(flag, (text) => text !== "")

const buyArgs = (flags: BuyFlags, config: Config): Either.Either<BuyArgs, string> => {
  const maxUsd = Number(flags.maxUsd)
  if (flags.maxUsd.trim() === "" || !Number.isFinite(maxUsd) || maxUsd < 0)
    return Either.left("--max-usd must be a number of USD, 0 or more")
  return Either.gen(function* () {
    const input = yield* json("--input", Option.getOrUndefined(flags.input))
    const policy = yield* json("--policy", Option.getOrUndefined(flags.policy))
    const optimizeFor = Option.getOrUndefined(flags.optimizeFor)
    const request = yield* Schema.decodeUnknownEither(BuyRequest)(
      {
        capability: flags.capability,
        maxUsd,
        ...(input === undefined ? {} : { input }),
        ...(policy === undefined ? {} : { policy }),
        ...(optimizeFor === undefined ? {} : { optimizeFor })
      },
      { errors: "all", onExcessProperty: "error" }
    ).pipe(Either.mapLeft(describeParseError))
    return {
      request,
      keyFile: Option.getOrElse(nonEmpty(flags.keyFile), () => config.buyer.keyFile),
      service: Option.getOrElse(nonEmpty(flags.service), () => config.buyer.service),
      receiptFile: Option.getOrUndefined(nonEmpty(flags.receiptFile))
    }
  })
}

/** The data as it is printed: text as it came, anything else as JSON. */
const printable = (data: unknown) => (typeof data === "string" ? data : JSON.stringify(data))

/**
 * `sextant buy <capability> ...`: one purchase with the buyer's
 * key (`--key-file`, else `buyer.keyFile`) through the service at `--service` (else
 * `buyer.service`). The data goes to stdout; one JSON line goes to stderr: the receipt id,
 * provider, payment and every attempt, or `{error, message, attempts}`. `--receipt-file` keeps the
 * signed receipt for `sextant receipt verify`. The service's API key comes from `buyer.apiKey` or
 * SEXTANT_API_KEY, never the command line (other users can read it there).
 */
export const buyCommand = async (
  flags: BuyFlags,
  config: Config,
  output: CommandOutput,
  env = process.env
): Promise<number> => {
  const args = buyArgs(flags, config)
  if (Either.isLeft(args)) {
    output.err(JSON.stringify({ error: "USAGE", message: args.left }))
    return BUY_EXIT.usage
  }
  const { request, keyFile, service, receiptFile } = args.right
  const apiKey = config.buyer.apiKey ?? (env.SEXTANT_API_KEY || undefined)
  const layer = BuyerClientLive(config, { keyFile, service, ...(apiKey === undefined ? {} : { apiKey }) })
  const program = Effect.flatMap(Buyer, (buyer) => buyer.buy(request)).pipe(
    Effect.map((result) => ({ _tag: "Bought" as const, result })),
    Effect.catchAll((error: BuyError) => Effect.succeed({ _tag: "Failed" as const, error })),
    Effect.provide(layer),
    Effect.either
  )
  const ended = await Effect.runPromise(program)
  if (Either.isLeft(ended)) {
    // The layer failed: the key file is missing or unusable, or the spend ledger cannot be opened.
    const error = ended.left
    const code = error._tag === "KeyFileError" ? "KEY_FILE" : "SPEND_LEDGER_UNAVAILABLE"
    output.err(JSON.stringify({ error: code, message: error._tag === "KeyFileError" ? error.message : error.reason }))
    return error._tag === "KeyFileError" ? BUY_EXIT.usage : BUY_EXIT.SPEND_LEDGER_UNAVAILABLE
  }
  if (ended.right._tag === "Failed") {
    const { error } = ended.right
    const code = buyErrorCode(error)
    output.err(JSON.stringify({ error: code, message: buyErrorMessage(error), attempts: attemptsOf(error) }))
    return BUY_EXIT[code as keyof typeof BUY_EXIT]
  }
  const result = Schema.encodeSync(BuyResult)(ended.right.result)
  output.out(printable(result.data))
  if (receiptFile !== undefined && result.receipt !== null)
    writeFileSync(receiptFile, `${JSON.stringify(result.receipt, null, 2)}\n`)
  output.err(
    JSON.stringify({
      receiptId: result.receipt?.receiptId ?? null,
      ...(result.receiptError === undefined ? {} : { receiptError: result.receiptError }),
      provider: result.provider,
      paid: result.paid,
      attempts: result.attempts
    })
  )
  return BUY_EXIT.ok
}
