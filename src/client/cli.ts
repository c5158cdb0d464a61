import { Effect, Either, Schema } from "effect"
import { writeFileSync } from "node:fs"
import { parseArgs as parseArgv } from "node:util"
import type { Config } from "../config.js"
import { BuyRequest, BuyResult } from "../domain/buy.js"
import { describeParseError } from "../domain/issues.js"
import type { CommandOutput } from "../receipts/cli.js"
import { Buyer } from "./Buyer.js"
import { attemptsOf, type BuyError, buyErrorCode, buyErrorMessage } from "./errors.js"
import { BuyerClientLive } from "./index.js"

export const BUY_USAGE = `usage: sextant buy <capability> --max-usd <n> [--input <json>] [--optimize-for balanced|cheapest|fastest|reliable]
                   [--policy <json>] [--key-file <path>] [--service <url>] [--receipt-file <path>] [--config <file>]`

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

const parseArgs = (argv: ReadonlyArray<string>, config: Config): Either.Either<BuyArgs | "help", string> => {
  let parsed
  try {
    parsed = parseArgv({
      args: [...argv],
      options: {
        input: { type: "string" },
        "max-usd": { type: "string" },
        "optimize-for": { type: "string" },
        policy: { type: "string" },
        "key-file": { type: "string" },
        service: { type: "string" },
        "receipt-file": { type: "string" },
        help: { type: "boolean", short: "h" }
      },
      strict: true,
      allowPositionals: true
    })
  } catch (e) {
    return Either.left((e as Error).message)
  }
  const { values, positionals } = parsed
  if (values.help) return Either.right("help")
  if (positionals.length !== 1) return Either.left("name one capability")
  if (values["max-usd"] === undefined) return Either.left("--max-usd is required: the most one request may cost")
  const maxUsd = Number(values["max-usd"])
  if (values["max-usd"].trim() === "" || !Number.isFinite(maxUsd) || maxUsd < 0) return Either.left("--max-usd must be a number of USD, 0 or more")
  return Either.gen(function* () {
    const input = yield* json("--input", values.input)
    const policy = yield* json("--policy", values.policy)
    const request = yield* Schema.decodeUnknownEither(BuyRequest)(
      {
        capability: positionals[0],
        maxUsd,
        ...(input === undefined ? {} : { input }),
        ...(policy === undefined ? {} : { policy }),
        ...(values["optimize-for"] === undefined ? {} : { optimizeFor: values["optimize-for"] })
      },
      { errors: "all", onExcessProperty: "error" }
    ).pipe(Either.mapLeft(describeParseError))
    return {
      request,
      keyFile: values["key-file"] || config.buyer.keyFile,
      service: values.service || config.buyer.service,
      receiptFile: values["receipt-file"] || undefined
    }
  })
}

/** The data as it is printed: text as it came, anything else as JSON. */
const printable = (data: unknown) => (typeof data === "string" ? data : JSON.stringify(data))

/**
 * `sextant buy <capability> ...`, given the arguments after `buy`: one purchase with the buyer's
 * key (`--key-file`, else `buyer.keyFile`) through the service at `--service` (else
 * `buyer.service`). The data goes to stdout; one JSON line goes to stderr: the receipt id,
 * provider, payment and every attempt, or `{error, message, attempts}`. `--receipt-file` keeps the
 * signed receipt for `sextant receipt verify`. The service's API key comes from `buyer.apiKey` or
 * SEXTANT_API_KEY, never the command line (other users can read it there).
 */
export const buyCommand = async (argv: ReadonlyArray<string>, config: Config, output: CommandOutput, env = process.env): Promise<number> => {
  const args = parseArgs(argv, config)
  if (Either.isLeft(args)) {
    output.err(JSON.stringify({ error: "USAGE", message: args.left }))
    output.err(BUY_USAGE)
    return BUY_EXIT.usage
  }
  if (args.right === "help") {
    output.out(BUY_USAGE)
    return BUY_EXIT.ok
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
  if (receiptFile !== undefined && result.receipt !== null) writeFileSync(receiptFile, `${JSON.stringify(result.receipt, null, 2)}\n`)
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
