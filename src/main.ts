#!/usr/bin/env bun
import { BunContext, BunRuntime } from "@effect/platform-bun"
import { Effect } from "effect"
import { cli } from "./cli/commands.js"
import { reportFailure, teardown } from "./cli/exit.js"

cli(process.argv).pipe(
  Effect.tapErrorCause(reportFailure),
  Effect.provide(BunContext.layer),
  BunRuntime.runMain({ disableErrorReporting: true, disablePrettyLogger: true, teardown })
)
