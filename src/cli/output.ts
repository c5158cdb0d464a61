import { Context } from "effect"
import { type CommandOutput, processOutput } from "../receipts/cli.js"

/** Where the commands print their lines: the process's streams, or a test's capture. */
export class CliOutput extends Context.Reference<CliOutput>()("sextant/CliOutput", { defaultValue: (): CommandOutput => processOutput }) {}
