/** The tools every Sextant MCP server offers without a buyer key, sorted: stdio, the binary and `/mcp`. */
export const TOOL_NAMES = [
  "get_resource",
  "get_resource_health",
  "get_resource_history",
  "get_resource_metrics",
  "list_discovery_resources",
  "preflight_payment",
  "route_resource",
  "search_discovery_resources",
  "search_resources",
  "validate_endpoint"
]
