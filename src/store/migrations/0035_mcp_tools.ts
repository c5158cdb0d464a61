import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The MCP tool an `mcp` resource sells (`resource.mcp`: toolName, transport, inputSchema,
 * example) as canonical JSON, null for `http` resources. A column of text rather than a table:
 * it is read only with its resource and never searched. Portable SQL.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE resources ADD COLUMN mcp_tool TEXT`
})
