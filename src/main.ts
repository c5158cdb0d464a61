#!/usr/bin/env bun
import { BunRuntime } from "@effect/platform-bun"
import { Either, Layer } from "effect"
import { createHash } from "node:crypto"
import { ServicesLive } from "./app.js"
import { type Config, loadConfig } from "./config.js"
import { BunServerLive, HttpLive } from "./http/server.js"

const USAGE = `usage: sextant <command> [--config <file>]

commands:
  serve                  run the HTTP service (default)
  keys hash <api-key>    print the sha256 to list under "apiKeys" in the config
`

/** `--config <file>` wins over SEXTANT_CONFIG; everything else is positional. */
const parseArgs = (argv: ReadonlyArray<string>) => {
  const positional: Array<string> = []
  let configPath = process.env.SEXTANT_CONFIG
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

const serve = (config: Config) =>
  Layer.launch(HttpLive.pipe(Layer.provide(ServicesLive(config)), Layer.provide(BunServerLive(config))))

const main = () => {
  const { positional, configPath } = parseArgs(process.argv.slice(2))
  const [command = "serve", ...rest] = positional
  switch (command) {
    case "serve":
      return BunRuntime.runMain(serve(loadOrExit(configPath)))
    case "keys":
      if (rest[0] === "hash" && rest[1] !== undefined) {
        process.stdout.write(`${createHash("sha256").update(rest[1]).digest("hex")}\n`)
        return
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
