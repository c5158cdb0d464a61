import { Effect, Layer, Option } from "effect"
import pkg from "../../package.json" with { type: "json" }
import { FoundationLive, ServicesLive } from "../app.js"
import type { Config } from "../config.js"
import { localApiHandler } from "../http/server.js"
import { type BuyToolOptions, makeBuyTool } from "../mcp/buyTool.js"
import { mcpServerFactory, serveMcpStdio } from "../mcp/server.js"
import { CliExit, EXIT } from "./exit.js"
import { stderrLogs } from "./logs.js"

export interface McpFlags {
  readonly buyerKeyFile: Option.Option<string>
  readonly sessionCapUsd: Option.Option<number>
}

/**
 * The buyer tool is opt-in per start: only `--buyer-key-file` turns it on (a config entry would
 * turn every MCP client of that config into a spender). The session cap defaults to
 * `buyer.mcpSessionCapUsd`. None: no buyer tool.
 */
const buyToolOptions = (flags: McpFlags, config: Config): Effect.Effect<Option.Option<BuyToolOptions>, CliExit> => {
  const usage = (message: string) => Effect.fail(new CliExit({ code: EXIT.usage, message }))
  if (Option.isNone(flags.buyerKeyFile)) {
    return Option.isSome(flags.sessionCapUsd)
      ? usage("--session-cap-usd needs --buyer-key-file")
      : Effect.succeed(Option.none())
  }
  const keyFile = flags.buyerKeyFile.value
  const sessionCapUsd = Option.getOrElse(flags.sessionCapUsd, () => config.buyer.mcpSessionCapUsd)
  if (keyFile === "" || !Number.isFinite(sessionCapUsd) || sessionCapUsd < 0)
    return usage("--buyer-key-file needs a path, --session-cap-usd a number of USD")
  return Effect.succeed(Option.some({ keyFile, sessionCapUsd }))
}

/** Resolves once the client closes stdin: the MCP session is over. */
const stdinClosed = Effect.async<void>((resume) => {
  const done = () => resume(Effect.void)
  process.stdin.once("close", done)
  return Effect.sync(() => void process.stdin.off("close", done))
})

/**
 * `sextant mcp`: MCP on stdio. stdout carries only protocol messages, so every log line (Effect's
 * logger and any library's console.log) goes to stderr. No scheduler or vertical runs here: a
 * server process sharing the store does that; this process reads, validates and routes. It ends
 * when stdin closes or on a signal, closing the server, the buyer tool and the handler.
 */
export const mcp = (config: Config, flags: McpFlags) =>
  Effect.gen(function* () {
    console.log = console.error
    const options = yield* buyToolOptions(flags, config)
    // The handler builds its layers at the first request; the catalog is loaded (and judged) here first.
    yield* Effect.scoped(Layer.build(FoundationLive(config)))
    const services = ServicesLive(config).pipe(Layer.provide(stderrLogs(config)))
    const api = yield* Effect.acquireRelease(
      Effect.sync(() => localApiHandler(services)),
      (api) => Effect.promise(() => api.dispose())
    )
    const buyer = yield* Option.match(options, {
      onNone: () => Effect.succeed(null),
      onSome: (options) =>
        Effect.acquireRelease(
          Effect.tryPromise({
            try: () => makeBuyTool(config, api.handler, options),
            catch: (e) => new CliExit({ code: EXIT.usage, message: e instanceof Error ? e.message : String(e) })
          }),
          (buyer) => Effect.promise(() => buyer.dispose())
        )
    })
    const factory = mcpServerFactory(api.handler, pkg.version, buyer === null ? [] : [buyer.tool])
    yield* Effect.acquireRelease(
      Effect.sync(() => serveMcpStdio(factory)),
      (served) => Effect.promise(() => served.close())
    )
    yield* stdinClosed
  }).pipe(Effect.scoped, Effect.provide(stderrLogs(config)))
