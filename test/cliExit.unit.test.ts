import { describe, expect, test } from "bun:test"
import { Exit } from "effect"
import { CliExit, exitCodeOf } from "../src/cli/exit.js"
import { ConfigError } from "../src/config.js"
import { runCli } from "./support/cli.js"

describe("the exit code of the command line, from one mapping", () => {
  test("success and an interruption (a signal) are 0; a CliExit its own code; a config error 2; anything else 1", () => {
    expect(exitCodeOf(Exit.void)).toBe(0)
    expect(exitCodeOf(Exit.interrupt(0 as never))).toBe(0)
    expect(exitCodeOf(Exit.fail(new CliExit({ code: 7 })))).toBe(7)
    expect(exitCodeOf(Exit.fail(new ConfigError("port", "not a port")))).toBe(2)
    expect(exitCodeOf(Exit.fail(new Error("boom")))).toBe(1)
    expect(exitCodeOf(Exit.die(new Error("defect")))).toBe(1)
  })

  test("a command line the definition refuses is 2, with a USAGE line last on stderr and nothing on stdout", async () => {
    for (const argv of [
      ["keys", "hash"],
      ["nope"],
      ["buy", "x"],
      ["keys", "buyer-new", "extra"],
      ["mcp", "--session-cap-usd", "lots"]
    ]) {
      const { code, out, err } = await runCli(...argv)
      expect({ argv, code, out, error: JSON.parse(err.at(-1)!).error }).toEqual({
        argv,
        code: 2,
        out: [],
        error: "USAGE"
      })
    }
  })

  test("a config error stops a command with 2 and its one line", async () => {
    const { code, out, err } = await runCli("keys", "buyer-new", "--config", "/nonexistent/sextant.json")
    expect({ code, out, err }).toEqual({
      code: 2,
      out: [],
      err: ["config error: config file: cannot read /nonexistent/sextant.json: ENOENT"]
    })
  })
})
