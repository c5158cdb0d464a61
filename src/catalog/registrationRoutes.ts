import { Effect, Schema } from "effect"
import type { ProbesConfig } from "../config.js"
import { McpTool } from "../domain/mcp.js"
import type { RegistrationDocument } from "../domain/registration.js"
import { fetchJson } from "../outbound/fetchAnswer.js"
import { listMcpTools } from "../verification/mcpProbe.js"
import {
  type FoundRoute,
  mergeRoutes,
  OPENAPI_PATHS,
  routesFromOpenApi,
  routesFromWellKnown,
  WELL_KNOWN_PATH
} from "./discoveryDocuments.js"

/** Where registration finds a seller's routes: its discovery documents, or an MCP server's `tools/list`. */

const isMcpTool = Schema.is(McpTool)

/** Discovery documents are read up to this size; an OpenAPI document outgrows a probe's body cap. */
const MAX_DOCUMENT_BYTES = 1024 * 1024

/** One document: the routes it names, or why it gave none. Never fails: a missing document is an answer. */
const read = (
  url: string,
  parse: (doc: unknown, origin: string) => ReadonlyArray<FoundRoute> | null,
  origin: string,
  probes: ProbesConfig
) =>
  fetchJson(url, probes, MAX_DOCUMENT_BYTES).pipe(
    Effect.map((answer) => {
      if (answer.httpStatus < 200 || answer.httpStatus >= 300) {
        return { doc: { url, routes: null, detail: `answered ${answer.httpStatus}` }, found: [] }
      }
      const found = parse(answer.body, origin)
      return found === null
        ? { doc: { url, routes: null, detail: "not a document of the expected shape" }, found: [] }
        : { doc: { url, routes: found.length, detail: null }, found }
    }),
    Effect.catchAll((e) =>
      Effect.succeed({ doc: { url, routes: null, detail: e.reason }, found: [] as ReadonlyArray<FoundRoute> })
    )
  )

/** x402scan's order: the first OpenAPI document that reads, then `/.well-known/x402`. */
export const discoverRoutes = (origin: string, probes: ProbesConfig) =>
  Effect.gen(function* () {
    const documents: Array<RegistrationDocument> = []
    let openapi: ReadonlyArray<FoundRoute> = []
    for (const path of OPENAPI_PATHS) {
      const { doc, found } = yield* read(`${origin}${path}`, routesFromOpenApi, origin, probes)
      documents.push(doc)
      if (doc.routes !== null) {
        openapi = found
        break
      }
    }
    const wellKnown = yield* read(`${origin}${WELL_KNOWN_PATH}`, routesFromWellKnown, origin, probes)
    documents.push(wellKnown.doc)
    return { documents, routes: mergeRoutes(openapi, wellKnown.found) }
  })

/**
 * An MCP server's tools as routes to probe: one `tools/list` on the registered endpoint, its
 * tools with their input schema. A server that cannot be listed is reported as one route.
 */
export const mcpToolRoutes = (url: string, probes: ProbesConfig) =>
  listMcpTools(url, probes).pipe(
    Effect.map((tools) => ({
      documents: [{ url, routes: tools.length, detail: null }],
      routes: tools.map((tool): FoundRoute => {
        const mcp = {
          kind: "tool" as const,
          toolName: tool.name,
          transport: "streamable-http" as const,
          inputSchema: tool.inputSchema
        }
        const found = {
          url,
          method: "POST" as const,
          foundIn: "tools/list" as const,
          description: tool.description ?? null
        }
        // A tool a catalog entry cannot hold (a name over 200 characters) is answered as skipped, never as a 500.
        return isMcpTool(mcp)
          ? { ...found, skip: null, mcp }
          : {
              ...found,
              skip: `tool "${tool.name.slice(0, 40)}..." is not one a catalog entry can hold (a name of 1-200 characters)`
            }
      })
    })),
    Effect.catchAll((e) =>
      Effect.succeed({
        documents: [
          { url, routes: null, detail: e._tag === "AnswerTimeout" ? `no answer within ${e.afterMs} ms` : e.reason }
        ],
        routes: []
      })
    )
  )
