import { isObject } from "../domain/isObject.js"
import type { McpTool } from "../domain/mcp.js"
import type { RouteOrigin } from "../domain/registration.js"
import type { HttpMethod } from "../domain/resources.js"

/**
 * Reading an origin's discovery documents, in x402scan's order: the OpenAPI document
 * (`/openapi.json`, then `/.well-known/openapi.json`), whose operations carrying `x-payment-info`
 * and a 402 response are paid routes, then `/.well-known/x402` (`{version: 1, resources: [url]}`).
 * A DNS `_x402` TXT pointer, x402scan's third step, is not read: it needs a public resolver. No I/O.
 */
export const OPENAPI_PATHS = ["/openapi.json", "/.well-known/openapi.json"] as const
export const WELL_KNOWN_PATH = "/.well-known/x402"

/** A route a document named: probed, unless `skip` says why not. */
export interface FoundRoute {
  readonly url: string
  readonly method: HttpMethod
  readonly foundIn: RouteOrigin
  readonly description: string | null
  readonly skip: string | null
  /** A tool an MCP server listed: probed with an unpaid tools/call instead of an HTTP request. */
  readonly mcp?: McpTool
}

const METHODS: ReadonlyArray<HttpMethod> = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]
/**
 * The methods a registration probes: a probe is an unpaid request to someone's server, and one
 * that changes or deletes something there is not a request this service sends for a stranger.
 */
export const PROBED_METHODS: ReadonlySet<HttpMethod> = new Set(["GET", "HEAD", "POST"])

/** `raw` resolved against the origin, when it stays on that origin: registration reads one origin's routes. */
const onOrigin = (raw: string, origin: string): URL | null => {
  try {
    const url = new URL(raw, origin)
    return url.origin === origin ? url : null
  } catch {
    return null
  }
}

/** The OpenAPI document's own base path (`servers[0].url`), when it is on the origin. */
const basePath = (doc: Record<string, unknown>, origin: string) => {
  const servers = Array.isArray(doc.servers) ? doc.servers : []
  const first: unknown = servers[0]
  const url = isObject(first) && typeof first.url === "string" ? onOrigin(first.url, origin) : null
  return url === null ? "" : url.pathname.replace(/\/$/, "")
}

const has402 = (operation: Record<string, unknown>) =>
  isObject(operation.responses) && Object.keys(operation.responses).some((status) => status === "402")

/** Paid operations of an OpenAPI document; null when `doc` is not one. */
export const routesFromOpenApi = (doc: unknown, origin: string): ReadonlyArray<FoundRoute> | null => {
  if (!isObject(doc) || !isObject(doc.paths)) return null
  const base = basePath(doc, origin)
  const routes: Array<FoundRoute> = []
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!isObject(item)) continue
    for (const method of METHODS) {
      const operation = item[method.toLowerCase()]
      if (!isObject(operation) || !("x-payment-info" in operation) || !has402(operation)) continue
      const description = [operation.summary, operation.description].find(
        (d): d is string => typeof d === "string" && d !== ""
      )
      // A path key is a path: `//victim.example/x` would resolve to another origin.
      const url = path.startsWith("/") && !path.startsWith("//") ? onOrigin(`${base}${path}`, origin) : null
      routes.push({
        url: url?.href ?? `${origin}${base}/${encodeURIComponent(path)}`,
        method,
        foundIn: "openapi",
        description: description ?? null,
        skip:
          url === null
            ? `path key ${JSON.stringify(path.slice(0, 100))} is not a path on ${origin}`
            : !PROBED_METHODS.has(method)
              ? `${method}: registration probes only GET, HEAD and POST routes`
              : path.includes("{")
                ? "a templated path: no concrete URL to probe"
                : null
      })
    }
  }
  return routes
}

/** The URLs of a `/.well-known/x402` document (version 1); null when `doc` is not one. */
export const routesFromWellKnown = (doc: unknown, origin: string): ReadonlyArray<FoundRoute> | null => {
  if (!isObject(doc) || doc.version !== 1 || !Array.isArray(doc.resources)) return null
  return doc.resources
    .filter((r): r is string => typeof r === "string")
    .map((raw) => {
      const url = onOrigin(raw, origin)
      return {
        url: url?.href ?? raw,
        method: "GET" as const,
        foundIn: "well-known" as const,
        description: null,
        skip: url === null ? `not a URL on ${origin}` : null
      }
    })
}

/** OpenAPI routes first, then the well-known ones no OpenAPI operation already named: one route per URL, as the catalog keeps one resource per URL. */
export const mergeRoutes = (...lists: ReadonlyArray<ReadonlyArray<FoundRoute>>): ReadonlyArray<FoundRoute> => {
  const seen = new Set<string>()
  const merged: Array<FoundRoute> = []
  for (const route of lists.flat()) {
    if (seen.has(route.url)) continue
    seen.add(route.url)
    merged.push(route)
  }
  return merged
}
