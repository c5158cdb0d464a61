import { describe, expect } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import type { McpKind } from "../src/domain/mcp.js"
import type { CatalogEntry } from "../src/domain/resources.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { StoreLive } from "../src/store/Store.js"
import { entry } from "./fixtures/verificationStack.js"
import { it } from "./support/effectTest.js"

/**
 * MCP catalog entries are keyed by server URL, kind and name: a tool and a prompt of one name on
 * one server are two resources, and an entry stored before kinds existed is a tool.
 */
const URL_ = "http://127.0.0.1:9/mcp"
const mcpEntry = (id: string, kind: McpKind, name: string): CatalogEntry => {
  const base = entry(id, URL_)
  return {
    ...base,
    resource: {
      ...base.resource,
      type: "mcp",
      method: "POST",
      mcp: { kind, toolName: name, transport: "streamable-http" }
    }
  }
}

describe("MCP entries keyed by URL, kind and name", () => {
  it.live(
    "a tool and a prompt named alike on one server are told apart; a stored entry without kind reads as a tool",
    () =>
      Effect.gen(function* () {
        const file = join(mkdtempSync(join(tmpdir(), "sextant-mcp-kinds-")), "sextant.db")
        const program = Effect.gen(function* () {
          const writes = yield* CatalogWritesRepo
          const reads = yield* ResourceReadsRepo
          const sql = yield* SqlClient.SqlClient
          yield* writes.upsertCatalog([
            mcpEntry("s.tool", "tool", "quote"),
            mcpEntry("s.prompt", "prompt", "quote"),
            mcpEntry("s.resource", "resource", "data://quote"),
            mcpEntry("s.old", "tool", "old")
          ])
          const idOf = (found: Option.Option<{ readonly resource: { readonly id: string } }>) =>
            Option.getOrNull(Option.map(found, (r) => r.resource.id))
          const tool = idOf(yield* reads.findByUrl(URL_, "quote"))
          const prompt = idOf(yield* reads.findByUrl(URL_, "quote", "prompt"))
          const resource = idOf(yield* reads.findByUrl(URL_, "data://quote", "resource"))
          const noToolByUri = idOf(yield* reads.findByUrl(URL_, "data://quote"))
          // As a store written before kinds existed holds it.
          yield* sql`UPDATE resources SET mcp_tool = ${'{"toolName":"old","transport":"streamable-http"}'} WHERE id = ${"s.old"}`
          const old = yield* reads.get(ResourceId.make("s.old"))
          const oldFound = idOf(yield* reads.findByUrl(URL_, "old"))
          return { tool, prompt, resource, noToolByUri, oldMcp: Option.getOrThrow(old).resource.mcp, oldFound }
        })
        const found = yield* Effect.provide(program, StoreLive(file))
        expect(found).toEqual({
          tool: "s.tool",
          prompt: "s.prompt",
          resource: "s.resource",
          noToolByUri: null,
          oldMcp: { kind: "tool", toolName: "old", transport: "streamable-http" },
          oldFound: "s.old"
        })
      })
  )
})
