import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * The MCP Inspector's CLI (a pinned devDependency), run as a user would, against a live server.
 * Asynchronously: the server answering it may run in the test's own process. HOME is a scratch
 * folder, since the CLI keeps a catalog file there.
 */
export const inspector = async (args: ReadonlyArray<string>) => {
  const run = Bun.spawn(["node_modules/.bin/mcp-inspector", "--cli", ...args], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, HOME: mkdtempSync(join(tmpdir(), "inspector-")), MCP_CATALOG_PATH: undefined },
    timeout: 30_000
  })
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(run.stdout).text(),
    new Response(run.stderr).text(),
    run.exited
  ])
  return { exitCode, stdout, stderr }
}
