import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import {
  DEMO_RESOURCES,
  type DemoServe,
  EXPECTED_STANDINGS,
  spawnDemoServe,
  waitForStandings
} from "./support/demoServe.js"
import { installJq } from "./support/jqCli.js"
import { childEnv } from "./support/serveProcess.js"

/**
 * The README's "Tour", command by command, against `serve` started as `npm start` starts it (demo
 * timings shortened, ports moved). The commands are read from the README itself, so the section
 * cannot drift from what the service answers. Their `jq` is jq from npm (test/support/jqCli.ts),
 * first on PATH, so the tour needs no system jq; `sh` and `curl` are the machine's.
 */

const ROOT = resolve(import.meta.dir, "..")

/** The shell commands of the README's `## Tour` section: comment lines dropped, `\` continuations joined. */
export const tourCommands = (readme: string): ReadonlyArray<string> => {
  const start = readme.indexOf("\n## Tour\n")
  if (start < 0) throw new Error("the README has no '## Tour' section")
  const end = readme.indexOf("\n## ", start + 1)
  const section = readme.slice(start, end < 0 ? undefined : end)
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!)
  return blocks
    .flatMap((block) => block.replace(/\\\n\s*/g, "").split("\n"))
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
}

/**
 * A README command as this run must send it: the service is on its own port, and `npx bun` from a
 * checkout is this very bun on the checkout's main.ts (the commands run in a scratch folder, so
 * `receipt.json` lands there and not in the repository).
 */
const localise = (command: string, port: number) =>
  command
    .replaceAll("localhost:4020", `127.0.0.1:${port}`)
    .replaceAll("npx bun src/main.ts", `${process.execPath} ${join(ROOT, "src/main.ts")}`)

const run = async (command: string, cwd: string) => {
  const env = { ...childEnv(), PATH: `${installJq(join(cwd, "bin"))}:${process.env.PATH ?? ""}` }
  const child = Bun.spawn(["sh", "-c", command], { cwd, env, stdout: "pipe", stderr: "pipe" })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited
  ])
  return { stdout, stderr, code }
}

const jsonLines = (text: string) =>
  text
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line))

describe("README tour", () => {
  const commands = tourCommands(readFileSync(join(ROOT, "README.md"), "utf8"))
  const scratch = mkdtempSync(join(tmpdir(), "sextant-tour-"))
  let demo: DemoServe
  const outputs: Array<{ stdout: string; stderr: string; code: number }> = []

  beforeAll(async () => {
    demo = await spawnDemoServe()
    await waitForStandings(demo.service)
    // In order, as a reader types them: the receipt's verification reads the file the step before wrote.
    for (const command of commands) outputs.push(await run(localise(command, demo.service.port), scratch))
  })
  afterAll(() => demo?.service.stop())

  test("has six commands, and each one succeeds with output (or a file) and nothing on stderr", () => {
    expect(commands.length).toBe(6)
    outputs.forEach(({ stdout, stderr, code }, i) => {
      expect({ command: commands[i], code, stderr }).toEqual({ command: commands[i], code: 0, stderr: "" })
      if (!/ > \S+$/.test(commands[i]!)) expect(stdout.trim()).not.toBe("")
    })
  })

  test("the pipelines ran jq from npm, not a system jq", async () => {
    const which = await run("command -v jq && jq --version", scratch)
    expect(which.stdout.trim().split("\n")).toEqual([join(scratch, "bin", "jq"), "jq-1.8.2"])
  })

  test("1. the catalog shows every provider at its standing, with its level", () => {
    const rows = outputs[0]!.stdout
      .trim()
      .split("\n")
      .map((line) => line.split("\t"))
    expect(rows.length).toBe(DEMO_RESOURCES)
    for (const [id, status, level] of rows) {
      expect(status).toBe(EXPECTED_STANDINGS[id!.split(".")[0] as keyof typeof EXPECTED_STANDINGS])
      expect(level).toBe("2")
    }
  })

  test("2. the metrics of the five inspect providers diverge", () => {
    const byId = new Map(jsonLines(outputs[1]!.stdout).map((m) => [m.resourceId, m]))
    expect(byId.size).toBe(5)
    expect(byId.get("demo-slow.rwa.inspect").p95LatencyMs).toBeGreaterThan(
      byId.get("demo-fast.rwa.inspect").p95LatencyMs
    )
    expect(byId.get("demo-flaky.rwa.inspect").reliability).toBeLessThan(0.8)
    expect(byId.get("demo-raiser.rwa.inspect").priceConsistency).toBeLessThan(1)
    expect(byId.get("stellar-intel.rwa.inspect")).toMatchObject({ reliability: 1, priceConsistency: 1 })
  })

  test("3. cheapest and reliable select different providers and explain the rejection", () => {
    const [cheapest, reliable] = jsonLines(outputs[2]!.stdout)
    expect(cheapest).toMatchObject({ optimizeFor: "cheapest", selected: "demo-flaky.rwa.inspect" })
    expect(reliable.optimizeFor).toBe("reliable")
    // HTTP endpoints and MCP tools compete in one route: any fully reliable seller of either kind.
    expect([
      "demo-fast.rwa.inspect",
      "demo-slow.rwa.inspect",
      "stellar-intel.rwa.inspect",
      "demo-fast.mcp.inspect",
      "stellar-intel.mcp.inspect"
    ]).toContain(reliable.selected)
    for (const decision of [cheapest, reliable]) {
      expect(decision.rejected).toEqual([
        { resourceId: "demo-raiser.rwa.inspect", codes: ["QUARANTINED"], why: expect.stringContaining("QUARANTINED") }
      ])
    }
  })

  test("4. the policy evaluation denies the flaky provider on reliability", () => {
    const [evaluation] = jsonLines(outputs[3]!.stdout)
    expect(evaluation.decision).toBe("DENY")
    expect(evaluation.reasons.map((r: { code: string }) => r.code)).toEqual(["RELIABILITY_LIMIT"])
  })

  test("5 and 6. the receipt is written, then verified offline", () => {
    const receipt = JSON.parse(readFileSync(join(scratch, "receipt.json"), "utf8"))
    expect(receipt.service).toMatchObject({ resourceId: "demo-fast.rwa.inspect", providerId: "demo-fast" })
    expect(JSON.parse(outputs[5]!.stdout)).toMatchObject({ valid: true, algorithm: "ed25519" })
  })
})

describe("tourCommands", () => {
  test("reads only the Tour section's sh blocks, joining continuations and dropping comments", () => {
    const readme =
      "# X\n\n## Tour\n\ntext\n\n```sh\n# a comment\ncurl a \\\n  -d b\n\nnpx bun src/main.ts x\n```\n\n## Next\n\n```sh\nnot this\n```\n"
    expect(tourCommands(readme)).toEqual(["curl a -d b", "npx bun src/main.ts x"])
  })
})
