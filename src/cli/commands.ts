import { Args, Command, Options } from "@effect/cli"
import { Effect, Layer, Logger, Option } from "effect"
import pkg from "../../package.json" with { type: "json" }
import { catalogImportCommand } from "../catalog/cli.js"
import { buyCommand } from "../client/cli.js"
import { type Config, DEFAULT_EMBEDDED, isEmbedded, loadConfig } from "../config.js"
import { ResourceId } from "../domain/ids.js"
import { OptimizeFor } from "../domain/routes.js"
import { channelsCommand } from "../facilitator/cli.js"
import { apiKeyHash } from "../http/authLive.js"
import { buyerNewCommand, facilitatorNewCommand, probeAddressCommand } from "../keys/cli.js"
import type { CommandOutput } from "../lifecycle/commandOutput.js"
import { installEgressGuard } from "../outbound/egress.js"
import { configuredEndpoints } from "../outbound/endpoints.js"
import { receiptVerifyCommand } from "../receipts/cli.js"
import { VerticalServer } from "../vertical/VerticalServer.js"
import { exitWith } from "./exit.js"
import { stderrLogs } from "./logs.js"
import { mcp } from "./mcp.js"
import { CliOutput } from "./output.js"
import { probe } from "./probe.js"
import { serve } from "./serve.js"

// The one definition of the command line: parsing, `--help`, docs/reference/cli.md and the
// README's command table all come from here.

const configFile = Options.file("config").pipe(
  Options.withDescription("the JSON config file; else SEXTANT_CONFIG, else the embedded defaults"),
  Options.optional
)

/**
 * `--config` wins over SEXTANT_CONFIG (an empty one counts as unset). Once it is loaded, the
 * process's `fetch` reaches only the endpoints it names (and `extra`); every other request goes
 * through the Connector or nowhere (the egress rule, docs/decisions.md).
 */
export const config = (flag: Option.Option<string>, extra: ReadonlyArray<string> = []) =>
  Effect.suspend(() =>
    loadConfig(
      Option.getOrElse(flag, () => process.env.SEXTANT_CONFIG || undefined),
      process.env
    )
  ).pipe(Effect.tap((loaded) => Effect.sync(() => installEgressGuard(configuredEndpoints(loaded, extra)))))

/** An optional text option. */
const text = (name: string, description: string) =>
  Options.text(name).pipe(Options.withDescription(description), Options.optional)

const keyFile = (description: string) => text("key-file", description)

/** A command that only groups others (`keys hash`, `keys buyer-new`, ...). */
const group = <Name extends string>(name: Name, description: string) =>
  Command.make(name).pipe(Command.withDescription(description))

/** A command that answers its exit code, given where to print. */
const printing = (run: (output: CommandOutput) => Promise<number>) =>
  Effect.flatMap(CliOutput, (output) => Effect.promise(() => run(output))).pipe(Effect.flatMap(exitWith))

const serveCommand = Command.make("serve", { config: configFile }, (flags) =>
  Effect.flatMap(config(flags.config), serve)
).pipe(
  Command.withDescription(
    "Run the HTTP service (:4020), the reference vertical (:4021), the demo providers (:4022-4025, when demo.enabled) and the probe and import schedules."
  )
)

const mcpCommand = Command.make(
  "mcp",
  {
    config: configFile,
    buyerKeyFile: text(
      "buyer-key-file",
      "with a buyer key, the MCP server also offers buy_resource (nothing else turns it on)"
    ),
    sessionCapUsd: Options.float("session-cap-usd").pipe(
      Options.withDescription(
        "the most buy_resource may spend in this session, in USD (default buyer.mcpSessionCapUsd)"
      ),
      Options.optional
    )
  },
  (flags) => Effect.flatMap(config(flags.config), (loaded) => mcp(loaded, flags))
).pipe(Command.withDescription("MCP server on stdio: tools mirror the HTTP API; logs go to stderr."))

const verticalCommand = Command.make("vertical", { config: configFile }, (flags) =>
  Effect.flatMap(config(flags.config), (loaded) => Layer.launch(VerticalServer.layer(loaded))).pipe(
    Effect.provide(Logger.pretty)
  )
).pipe(Command.withDescription("The paid reference vertical alone."))

const probeCommand = Command.make(
  "probe",
  {
    config: configFile,
    resourceId: Args.text({ name: "resource-id" }).pipe(Args.withSchema(ResourceId), Args.optional)
  },
  (flags) => Effect.flatMap(config(flags.config), (loaded) => probe(loaded, flags.resourceId))
).pipe(
  Command.withDescription(
    "Probe one resource now (exit 1 unless healthy, 2 if unknown), or run one catalog cycle; JSON on stdout, logs on stderr."
  )
)

const receiptVerify = Command.make(
  "verify",
  {
    file: Args.text({ name: "file" }),
    publicKey: text("public-key", "check against this key (base64 or G...) instead of the receipt's own serviceSigner"),
    config: configFile
  },
  (flags) => printing((output) => receiptVerifyCommand(flags.file, Option.getOrUndefined(flags.publicKey), output))
).pipe(Command.withDescription("Verify a receipt offline: one JSON line; exit 0 valid, 1 invalid, 2 unreadable."))

const receiptCommand = group("receipt", "Signed receipts.").pipe(Command.withSubcommands([receiptVerify]))

const catalogImport = Command.make(
  "import",
  {
    location: Args.text({ name: "url|file" }),
    id: text(
      "id",
      "the source id to import as (lowercase, e.g. cdp-bazaar); default: the configured source with this URL, else cli"
    ),
    config: configFile
  },
  (flags) =>
    Effect.flatMap(config(flags.config), (loaded) =>
      catalogImportCommand(loaded, flags.location, flags.id).pipe(Effect.provide(stderrLogs(loaded)))
    ).pipe(Effect.flatMap(exitWith))
).pipe(
  Command.withDescription(
    "Import once from a Bazaar-shaped discovery service (its base URL or its /discovery/resources URL) or a JSON file of a page or of items: a progress bar on stderr, the summary as JSON on stdout; exit 1 when the import failed (nothing written), 2 on bad arguments."
  )
)

const catalogCommand = group("catalog", "The resource catalog.").pipe(Command.withSubcommands([catalogImport]))

const keysHash = Command.make("hash", { apiKey: Args.text({ name: "api-key" }), config: configFile }, (flags) =>
  Effect.map(CliOutput, (output) => output.out(apiKeyHash(flags.apiKey)))
).pipe(Command.withDescription('Print the sha256 of an API key, to list under "apiKeys" in the config.'))

/** A key command: `--key-file`, else the configured path, given to a command that prints the key's address. */
const keyAddress = <Name extends string>(
  name: Name,
  keyFileHelp: string,
  configured: (config: Config) => string,
  run: (keyFile: string, output: CommandOutput) => Promise<number>
) =>
  Command.make(name, { keyFile: keyFile(keyFileHelp), config: configFile }, (flags) =>
    Effect.flatMap(config(flags.config), (loaded) =>
      printing((output) =>
        run(
          Option.getOrElse(flags.keyFile, () => configured(loaded)),
          output
        )
      )
    )
  )

const keysProbeAddress = keyAddress(
  "probe-address",
  "the probe payer's key file (default economicProbes.payerKeyFile, ./data/probe.key)",
  (c) => c.economicProbes.payerKeyFile,
  probeAddressCommand
).pipe(
  Command.withDescription(
    "Print the economic probes' payer address (G...) to fund, creating its key file (a Stellar secret seed on one line, mode 0600) if missing; never prints the secret."
  )
)

const keysBuyerNew = keyAddress(
  "buyer-new",
  "the buyer's key file (default buyer.keyFile, ./data/buyer.key)",
  (c) => c.buyer.keyFile,
  buyerNewCommand
).pipe(
  Command.withDescription(
    "Create the buyer's key (mode 0600) if missing and print its address (G...) to fund; an existing file is kept."
  )
)

const keysFacilitatorNew = keyAddress(
  "facilitator-new",
  "the fee account's key file (default: the first embedded facilitator's feeAccountKeyFile, ./data/facilitator.key)",
  (c) => c.facilitators.find(isEmbedded)?.feeAccountKeyFile ?? DEFAULT_EMBEDDED.feeAccountKeyFile,
  facilitatorNewCommand
).pipe(
  Command.withDescription(
    "Create the embedded facilitator's fee account key (mode 0600) if missing and print its address (G...) to fund with XLM; an existing file is kept, the secret never printed."
  )
)

const keysCommand = group("keys", "API key hashes and Stellar keys.").pipe(
  Command.withSubcommands([keysHash, keysProbeAddress, keysBuyerNew, keysFacilitatorNew])
)

const facilitatorChannels = Command.make(
  "channels",
  {
    id: text("id", "the embedded facilitator's id (default: the first one configured)"),
    xlm: Options.float("xlm").pipe(
      Options.withDescription("the XLM each channel is created with or topped up to"),
      Options.withDefault(5)
    ),
    merge: Options.boolean("merge").pipe(
      Options.withDescription("merge every channel account back into the fee account instead")
    ),
    config: configFile
  },
  (flags) =>
    Effect.flatMap(config(flags.config), (loaded) =>
      printing((output) =>
        channelsCommand(loaded, { id: Option.getOrUndefined(flags.id), xlm: flags.xlm, merge: flags.merge }, output)
      )
    )
).pipe(
  Command.withDescription(
    "Create the embedded facilitator's missing channel accounts and top up low ones (or --merge them back), paid by the fee account: one JSON line per channel and transaction, then a summary; exit 1 if a transaction failed, 2 on a usage or key error."
  )
)

const facilitatorCommand = group("facilitator", "The embedded Stellar facilitator.").pipe(
  Command.withSubcommands([facilitatorChannels])
)

const buy = Command.make(
  "buy",
  {
    capability: Args.text({ name: "capability" }),
    maxUsd: Options.text("max-usd").pipe(Options.withDescription("required: the most one request may cost, in USD")),
    input: text("input", "JSON: the resource's body (POST), query parameters (GET) or an MCP tool's arguments"),
    optimizeFor: Options.choice("optimize-for", OptimizeFor.literals).pipe(
      Options.withDescription("how the route ranks providers"),
      Options.optional
    ),
    policy: text("policy", "JSON: an AgentPolicy the route must satisfy"),
    keyFile: keyFile("the buyer's key file (default buyer.keyFile)"),
    service: text("service", "the Sextant service's URL (default buyer.service)"),
    receiptFile: text("receipt-file", "write the signed receipt here, for sextant receipt verify"),
    config: configFile
  },
  (flags) =>
    Effect.flatMap(config(flags.config, Option.toArray(flags.service)), (loaded) =>
      printing((output) => buyCommand(flags, loaded, output))
    )
).pipe(
  Command.withDescription(
    "Buy one call with the buyer's key: route, pay, get a receipt. The data on stdout, one JSON line on stderr (receipt id, provider, payment, attempts, or the error); exit codes 0-9 below."
  )
)

/** `sextant` alone (or with only `--config`) serves, as `sextant serve` does. */
export const sextant = Command.make("sextant", { config: configFile }, (flags) =>
  Effect.flatMap(config(flags.config), serve)
).pipe(
  Command.withDescription("Verification, routing, policy and settlement layer for x402 payments on Stellar."),
  Command.withSubcommands([
    serveCommand,
    mcpCommand,
    verticalCommand,
    probeCommand,
    receiptCommand,
    catalogCommand,
    keysCommand,
    facilitatorCommand,
    buy
  ])
)

/** Runs the command line (`process.argv`: the runtime and the script come first). */
export const cli = Command.run(sextant, { name: "sextant", version: pkg.version })
