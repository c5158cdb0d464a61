/** Where a plain command prints: one line at a time to its output or its error stream, so a test can capture both. */
export interface CommandOutput {
  readonly out: (line: string) => void
  readonly err: (line: string) => void
}

/** The process's own streams, one line per call. */
export const processOutput: CommandOutput = {
  out: (line) => void process.stdout.write(`${line}\n`),
  err: (line) => void process.stderr.write(`${line}\n`)
}
