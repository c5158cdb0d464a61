#!/usr/bin/env bun
import { BunRuntime } from "@effect/platform-bun"
import { Cause, Duration, Effect, Either, Layer, Logger } from "effect"
import { apiKeyHash } from "./http/authLive.js"
import { parseArgs as parseArgv } from "node:util"
import { FoundationLive, ServicesLive } from "./app.js"
import { catalogImportCommand } from "./catalog/cli.js"
import { buyCommand } from "./client/cli.js"
import { ImportSchedulerLive } from "./catalog/ImportScheduler.js"
import { AppConfig, type Config, ConfigError, loadConfig } from "./config.js"
import { DemoProviders } from "./demo/DemoProviders.js"
import { NotFound } from "./domain/errors.js"
import { buyerNewCommand, probeAddressCommand } from "./keys/cli.js"
import { openModeRefusal } from "./http/openMode.js"
import { BunServerLive, HttpLive, localApiHandler } from "./http/server.js"
import { Lifecycle } from "./lifecycle/Lifecycle.js"
import { type BuyToolOptions, makeBuyTool } from "./mcp/buyTool.js"
import { redactorFor } from "./redaction/redact.js"
import { RedactingLogger } from "./redaction/RedactingLogger.js"
import { makeMcpServer } from "./mcp/server.js"
import { receiptVerifyCommand } from "./receipts/cli.js"
import { EconomicProber } from "./verification/EconomicProber.js"
import { ProbeSchedulerLive } from "./verification/ProbeScheduler.js"
import { Prober } from "./verification/Prober.js"
import { VerticalServer } from "./vertical/VerticalServer.js"
import { processLogger, TelemetryLive } from "./telemetry/Telemetry.js"
import pkg from "../package.json" with { type: "json" }
import { ResourceId } from "./domain/ids.js"

const USAGE = `usage: sextant <command> [--config <file>]

commands:
  serve                  run the HTTP service (default)
  mcp                    MCP server on stdio (tools mirror the HTTP API)
  vertical               the paid reference vertical alone
  probe [resource-id]    probe one resource (exit 1 unless healthy) or the whole catalog once
  catalog import <url|file> [--id <source id>]
                         import once from a discovery service or a JSON file (progress on stderr,
                         summary JSON on stdout; exit 1 when the import failed)
  receipt verify <file> [--public-key <base64|G...>]
                         verify a receipt offline (exit 0 valid, 1 invalid, 2 unreadable)
  keys hash <api-key>    print the sha256 to list under "apiKeys" in the config
  keys probe-address [--key-file <path>]
                         print the economic probes' payer address (G...), creating its key if missing
  keys buyer-new [--key-file <path>]
                         create the buyer key (0600) if missing and print its address (G...)
  buy <capability> --max-usd <n> [--input <json>] [--optimize-for <how>] [--policy <json>]
      [--key-file <path>] [--service <url>] [--receipt-file <path>]
                         route, pay with the buyer key and get a receipt: data on stdout, a JSON
                         summary on stderr; exit 3 nothing eligible, 4 all providers failed,
                         5 outcome unknown, 6 spend limit, 7 paid but failed (README)
  mcp [--buyer-key-file <path>] [--session-cap-usd <n>]
                         with a buyer key, the MCP server also offers buy_resource
`

/** `--config <file>` wins over SEXTANT_CONFIG; everything else is positional. */
const parseArgs = (argv: ReadonlyArray<string>) => {
  const positional: Array<string> = []
  let configPath = process.env.SEXTANT_CONFIG || undefined
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === "--config") configPath = argv[++i]
    else if (arg.startsWith("--config=")) configPath = arg.slice("--config=".length)
    else positional.push(arg)
  }
  return { positional, configPath }
}

const loadOrExit = (configPath: string | undefined): Config => {
  const loaded = loadConfig(configPath, process.env)
  if (Either.isLeft(loaded)) {
    process.stderr.write(`${loaded.left.line}\n`)
    process.exit(2)
  }
  return loaded.right
}

/**
 * A catalog file is decoded when the store is open (catalog/CatalogLoad.ts), not by loadConfig:
 * its config error stops the command exactly as one found by loadOrExit does.
 */
const exitOnConfigError = <A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.catchAll(program, (e) =>
    e instanceof ConfigError
      ? Effect.sync(() => {
          process.stderr.write(`${e.line}\n`)
          return process.exit(2)
        })
      : Effect.fail(e)
  )

/** Exit code of a shutdown cut short (a second signal, or the grace ran out): not a clean stop. */
const FORCED_EXIT = 1

/**
 * The graceful part of a shutdown. Its finalizer runs once the schedules above it have stopped and
 * before the listeners below it close: readiness turns 503, new requests are turned away, and the
 * requests and settles in flight get up to `shutdownGraceSeconds` to be answered and journaled.
 * If the grace runs out the process exits at once, leaving the journal as a crash would (the next
 * start's recovery handles it, as after a crash).
 */
const GracefulShutdown = Layer.scopedDiscard(
  Effect.gen(function* () {
    const lifecycle = yield* Lifecycle
    const { shutdownGraceSeconds } = yield* AppConfig
    yield* Effect.addFinalizer(() =>
      lifecycle.drain(Duration.seconds(shutdownGraceSeconds)).pipe(
        Effect.flatMap((finished) => (finished ? Effect.void : Effect.sync(() => process.exit(FORCED_EXIT))))
      )
    )
  })
)

/**
 * A second SIGTERM / SIGINT while the first one's shutdown drains exits at once. (The runtime
 * turns the first signal into an interruption of the main fiber, which starts the drain.)
 */
const exitOnSecondSignal = () => {
  let signals = 0
  const onSignal = () => {
    signals += 1
    if (signals < 2) return
    process.stderr.write("second signal: exiting without waiting for requests in flight\n")
    process.exit(FORCED_EXIT)
  }
  process.on("SIGTERM", onSignal)
  process.on("SIGINT", onSignal)
}

/**
 * The service, the reference vertical beside it unless `vertical.enabled` is false, the demo
 * providers when `demo.enabled`, and the probe schedules, the import schedule and economic probes
 * when enabled, started once the listeners listen so the first cycle already finds them up.
 * Layers close in reverse: on a signal the schedules stop first, then the graceful drain runs,
 * then the listeners and the services close.
 */
const serve = (config: Config) => {
  const services = ServicesLive(config, "server")
  const http = HttpLive.pipe(Layer.provide(BunServerLive(config)))
  const listeners = Layer.merge(config.vertical.enabled ? Layer.merge(http, VerticalServer.layer(config)) : http, DemoProviders.layer(config))
  const drained = GracefulShutdown.pipe(Layer.provideMerge(listeners))
  const schedules = Layer.mergeAll(ProbeSchedulerLive, ImportSchedulerLive, EconomicProber.schedule)
  return exitOnConfigError(
    Layer.launch(schedules.pipe(Layer.provide(drained), Layer.provide(services), Layer.provide(TelemetryLive(config, pkg.version))))
  )
}

/**
 * Runs `serve` with every log line redacted, in the configured format (`logFormat`). A failure to
 * start is logged here, through the same logger, rather than by the runtime's own.
 */
const runRedacted = <E>(config: Config, program: Effect.Effect<unknown, E>) =>
  BunRuntime.runMain(
    program.pipe(
      Effect.tapErrorCause((cause) => (Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError(cause))),
      Effect.provide(processLogger(config))
    ),
    { disablePrettyLogger: true, disableErrorReporting: true }
  )

/**
 * MCP on stdio: stdout carries only protocol messages, so every log line (Effect's logger and any
 * library's console.log) goes to stderr. No scheduler or vertical runs here: a server process
 * sharing the store does that; this process reads, validates and routes.
 */
const mcp = async (config: Config, argv: ReadonlyArray<string>) => {
  console.log = console.error
  const options = parseMcpArgs(argv, config)
  if (Either.isLeft(options)) {
    process.stderr.write(`${options.left}\n${MCP_USAGE}\n`)
    process.exit(2)
  }
  const services = ServicesLive(config).pipe(Layer.provide(stderrLogs(config)))
  // The handler builds its layers at the first request; the catalog is loaded (and judged) here first.
  await Effect.runPromise(exitOnConfigError(Effect.scoped(Layer.build(FoundationLive(config)))).pipe(Effect.provide(stderrLogs(config))))
  const api = localApiHandler(services)
  const buyer = options.right === null ? null : await makeBuyTool(config, api.handler, options.right).catch((e: unknown) => e as Error)
  if (buyer instanceof Error) {
    process.stderr.write(`${buyer.message}\n`)
    process.exit(2)
  }
  const { connectStdio, server } = makeMcpServer(api.handler, pkg.version, buyer === null ? [] : [buyer.tool])
  const shutdown = async () => {
    await server.close()
    await buyer?.dispose()
    await api.dispose()
    process.exit(0)
  }
  process.stdin.on("close", shutdown)
  process.on("SIGTERM", shutdown)
  process.on("SIGINT", shutdown)
  await connectStdio()
}

const MCP_USAGE = "usage: sextant mcp [--buyer-key-file <path>] [--session-cap-usd <n>] [--config <file>]"

/**
 * The buyer tool is opt-in per start: only `--buyer-key-file` turns it on (a config entry would
 * turn every MCP client of that config into a spender). The session cap defaults to
 * `buyer.mcpSessionCapUsd`. Null: no buyer tool.
 */
const parseMcpArgs = (argv: ReadonlyArray<string>, config: Config): Either.Either<BuyToolOptions | null, string> => {
  try {
    const { values } = parseArgv({
      args: [...argv],
      options: { "buyer-key-file": { type: "string" }, "session-cap-usd": { type: "string" } },
      strict: true,
      allowPositionals: false
    })
    const keyFile = values["buyer-key-file"]
    const capText = values["session-cap-usd"]
    if (keyFile === undefined) return capText === undefined ? Either.right(null) : Either.left("--session-cap-usd needs --buyer-key-file")
    const sessionCapUsd = capText === undefined ? config.buyer.mcpSessionCapUsd : Number(capText)
    if (keyFile === "" || !Number.isFinite(sessionCapUsd) || sessionCapUsd < 0) return Either.left("--buyer-key-file needs a path, --session-cap-usd a number of USD")
    return Either.right({ keyFile, sessionCapUsd })
  } catch (e) {
    return Either.left((e as Error).message)
  }
}

/** For commands whose stdout is data (MCP messages, probe JSON): log lines go to stderr. */
const stderrLogfmt = Logger.withConsoleError(Logger.logfmtLogger)
const stderrLogs = (config: Config) => RedactingLogger(redactorFor(config), stderrLogfmt)

/**
 * One probe pass from the command line: a single resource, or the whole catalog (one cycle,
 * with pruning), printed as JSON. Exit 1 when a named resource is not healthy.
 */
const probe = (config: Config, resourceId: string | undefined) =>
  Effect.gen(function* () {
    const prober = yield* Prober
    if (resourceId === undefined) {
      process.stdout.write(`${JSON.stringify(yield* prober.runCycle)}\n`)
      return
    }
    const result = yield* prober.probeResource(ResourceId.make(resourceId))
    process.stdout.write(`${JSON.stringify(result)}\n`)
    if (!result.healthy) process.exitCode = 1
  }).pipe(
    Effect.catchIf(
      (e): e is NotFound => e instanceof NotFound,
      (e) =>
        Effect.sync(() => {
          process.stderr.write(`${e.message}\n`)
          process.exitCode = 2
        })
    ),
    Effect.provide(ServicesLive(config)),
    exitOnConfigError,
    Effect.provide(stderrLogs(config))
  )

const commandOutput = {
  out: (line: string) => void process.stdout.write(`${line}\n`),
  err: (line: string) => void process.stderr.write(`${line}\n`)
}

const main = () => {
  const { positional, configPath } = parseArgs(process.argv.slice(2))
  const [command = "serve", ...rest] = positional
  switch (command) {
    case "serve": {
      const config = loadOrExit(configPath)
      const exposed = openModeRefusal(config)
      if (exposed !== undefined) {
        process.stderr.write(`${exposed.line}\n`)
        process.exit(2)
      }
      exitOnSecondSignal()
      return runRedacted(config, serve(config))
    }
    case "vertical":
      return BunRuntime.runMain(Layer.launch(VerticalServer.layer(loadOrExit(configPath))))
    case "mcp":
      return void mcp(loadOrExit(configPath), rest)
    case "probe":
      return BunRuntime.runMain(probe(loadOrExit(configPath), rest[0]), { disablePrettyLogger: true })
    case "catalog":
      if (rest[0] === "import" && rest[1] !== undefined) {
        const config = loadOrExit(configPath)
        return BunRuntime.runMain(catalogImportCommand(config, rest.slice(1)).pipe(exitOnConfigError, Effect.provide(stderrLogs(config))), {
          disablePrettyLogger: true
        })
      }
      break
    case "buy":
      return void buyCommand(rest, loadOrExit(configPath), commandOutput).then((code) => {
        // exitCode, not exit(): stdout may still be draining into a pipe.
        process.exitCode = code
      })
    case "receipt":
      if (rest[0] === "verify") return void receiptVerifyCommand(rest.slice(1)).then((code) => process.exit(code))
      break
    case "keys":
      if (rest[0] === "hash" && rest[1] !== undefined) {
        process.stdout.write(`${apiKeyHash(rest[1])}\n`)
        return
      }
      if (rest[0] === "probe-address") {
        const keyFile = loadOrExit(configPath).economicProbes.payerKeyFile
        return void probeAddressCommand(rest.slice(1), keyFile, commandOutput).then((code) => process.exit(code))
      }
      if (rest[0] === "buyer-new") {
        const keyFile = loadOrExit(configPath).buyer.keyFile
        return void buyerNewCommand(rest.slice(1), keyFile, commandOutput).then((code) => process.exit(code))
      }
      break
    case "help":
    case "--help":
      process.stdout.write(USAGE)
      return
  }
  process.stderr.write(USAGE)
  process.exit(2)
}

main()
