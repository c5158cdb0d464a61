import { type Console, Context, Effect } from "effect"
import { type CommandOutput, processOutput } from "../lifecycle/commandOutput.js"

/** Where the commands print their lines: the process's streams, or a test's capture. */
export class CliOutput extends Context.Reference<CliOutput>()("sextant/CliOutput", {
  defaultValue: (): CommandOutput => processOutput
}) {}

/** A Console whose log and error lines land in `out` and `err` (@effect/cli prints help and errors through it). */
export const capturingConsole = (out: Array<string>, err: Array<string>): Effect.Effect<Console.Console> =>
  Effect.map(Effect.console, (console) => {
    const line =
      (into: Array<string>) =>
      (...args: ReadonlyArray<unknown>) =>
        Effect.sync(() => void into.push(args.map(String).join(" ")))
    return { ...console, log: line(out), error: line(err) }
  })
