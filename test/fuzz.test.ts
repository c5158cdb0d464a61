/**
 * Schema-driven fuzzing of every endpoint, on a fixed seed like the other property tests (set
 * FC_SEED to an integer to run another; a failure prints the seed and path that reproduce it).
 * Requests are derived from the same schemas the server decodes with (Effect Schema's Arbitrary
 * for path, query and body, encoded as the wire carries them), mixed with malformed variants (any
 * JSON, text that is not JSON, another content type, deep nesting, wrong methods), and from the
 * OpenAPI document's own parameter schemas. Each answer must be below 500, `{error, message}`
 * when not 2xx, and agree with `/openapi.json`: a status the operation declares, a body its schema
 * for that status accepts. Every URL a generated body could make the service fetch is pointed at
 * a closed loopback port first, and `fetch` itself refuses anything but loopback while it runs.
 */
import Ajv2020 from "ajv/dist/2020"
import addFormats from "ajv-formats"
import { apiKeyHash } from "../src/http/authLive.js"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
// Effect's own fast-check, the one its Arbitrary module builds with (two copies do not mix).
import { Arbitrary, FastCheck as fc, Option, Schema } from "effect"
import { SextantApi } from "../src/contract/index.js"
import { type FixtureFacilitator, startFacilitator } from "./fixtures/facilitator.js"
import { startServer, testConfig } from "./support/server.js"

const seed = (() => {
  const text = process.env.FC_SEED
  if (text === undefined || text === "") return 1812
  const parsed = Number(text)
  if (!Number.isSafeInteger(parsed)) throw new Error(`FC_SEED must be an integer, got "${text}"`)
  return parsed
})()

const OPERATOR_KEY = "fuzz-operator-key"
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"])

/** Any string a URL parser would read as an http(s) URL to some other host becomes one to a closed loopback port. */
const CLOSED = "http://127.0.0.1:9/fuzzed"
const keepLocal = (value: unknown): unknown => {
  if (typeof value === "string") {
    try {
      const url = new URL(value)
      return LOOPBACK_HOSTS.has(url.hostname) ? value : CLOSED
    } catch {
      return value
    }
  }
  if (Array.isArray(value)) return value.map(keepLocal)
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, keepLocal(v)]))
  return value
}

interface Endpoint {
  readonly name: string
  readonly method: string
  readonly path: string
  readonly pathSchema: Option.Option<Schema.Schema.Any>
  readonly urlParamsSchema: Option.Option<Schema.Schema.Any>
  readonly payloadSchema: Option.Option<Schema.Schema.Any>
}

const endpoints: ReadonlyArray<Endpoint> = Object.values(SextantApi.groups).flatMap((group) =>
  Object.values(group.endpoints).map((e: any) => ({
    name: `${group.identifier}.${e.name}`,
    method: e.method,
    path: e.path,
    pathSchema: e.pathSchema,
    urlParamsSchema: e.urlParamsSchema,
    payloadSchema: e.payloadSchema
  }))
)

/** Values of `schema` as the wire carries them; any JSON when the schema has no Arbitrary. */
const encodedArbitrary = (schema: Schema.Schema.Any): fc.Arbitrary<unknown> => {
  try {
    const arb = Arbitrary.make(schema as Schema.Schema<unknown, unknown, never>)
    const encode = Schema.encodeUnknownOption(schema as Schema.Schema<unknown, unknown, never>)
    return arb.map((value) => Option.getOrElse(encode(value), () => value))
  } catch {
    return fc.jsonValue()
  }
}

const anyText = fc.string({ maxLength: 40 })
const realIds = fc.constantFrom("stellar-intel.rwa.inspect", "no-such-id", "a".repeat(300), "%2e%2e", "x402")

interface Generated {
  readonly method: string
  readonly path: string
  readonly query: Record<string, string>
  readonly body: { readonly kind: "none" } | { readonly kind: "json"; readonly value: unknown } | { readonly kind: "raw"; readonly text: string; readonly type: string }
  readonly operator: boolean
}

const bodyArb = (endpoint: Endpoint): fc.Arbitrary<Generated["body"]> => {
  const malformed = fc.oneof(
    fc.jsonValue().map((value) => ({ kind: "json" as const, value })),
    fc.string().map((text) => ({ kind: "raw" as const, text: `{${text}`, type: "application/json" })),
    fc.jsonValue().map((value) => ({ kind: "raw" as const, text: JSON.stringify(value), type: "text/plain" })),
    fc.integer({ min: 60, max: 200 }).map((depth) => ({ kind: "raw" as const, text: "[".repeat(depth) + "]".repeat(depth), type: "application/json" }))
  )
  return Option.match(endpoint.payloadSchema, {
    onNone: () => fc.oneof({ arbitrary: fc.constant({ kind: "none" as const }), weight: 3 }, { arbitrary: malformed, weight: 1 }),
    onSome: (schema) =>
      fc.oneof(
        { arbitrary: encodedArbitrary(schema).map((value) => ({ kind: "json" as const, value })), weight: 3 },
        { arbitrary: malformed, weight: 1 }
      )
  })
}

const queryArb = (endpoint: Endpoint): fc.Arbitrary<Record<string, string>> =>
  Option.match(endpoint.urlParamsSchema, {
    onNone: () => fc.constant({}),
    onSome: (schema) =>
      fc.oneof(
        encodedArbitrary(schema).map((value) =>
          Object.fromEntries(Object.entries((value ?? {}) as Record<string, unknown>).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]))
        ),
        fc.dictionary(fc.constantFrom("limit", "offset", "before", "state", "reason", "type"), anyText, { maxKeys: 3 })
      )
  })

const requestArb = (endpoint: Endpoint): fc.Arbitrary<Generated> =>
  fc.record({
    method: fc.oneof({ arbitrary: fc.constant(endpoint.method), weight: 9 }, { arbitrary: fc.constantFrom("GET", "POST", "PUT", "DELETE"), weight: 1 }),
    path: fc.tuple(realIds, anyText).map(([id, other]) =>
      endpoint.path.replace(/:[^/]+/g, () => encodeURIComponent(other.length % 2 === 0 ? id : other || "x"))
    ),
    query: queryArb(endpoint),
    body: bodyArb(endpoint),
    operator: fc.boolean()
  })

let server: Awaited<ReturnType<typeof startServer>>
let backend: FixtureFacilitator
let spec: any
let ajv: Ajv2020
const realFetch = globalThis.fetch
const strayTargets: Array<string> = []

beforeAll(async () => {
  // The hard rule, enforced: while the fuzzer runs, nothing but loopback is fetched.
  globalThis.fetch = Object.assign(
    (input: RequestInfo | URL, init?: RequestInit) => {
      const url = new URL(input instanceof Request ? input.url : String(input))
      if (!LOOPBACK_HOSTS.has(url.hostname)) {
        strayTargets.push(url.href)
        return Promise.reject(new Error(`fuzz: refused a fetch of ${url.origin}`))
      }
      return realFetch(input, init)
    },
    realFetch
  ) as typeof fetch
  backend = startFacilitator()
  const base = testConfig()
  server = await startServer(
    testConfig({
      facilitators: [{ id: "fixture", url: backend.url }],
      apiKeys: [{ principal: "fuzz-operator", sha256: apiKeyHash(OPERATOR_KEY), role: "operator" }],
      limits: { ...base.limits, validate: null, register: null, receipts: null, verify: null, settle: null },
      probes: { ...base.probes, timeoutMs: 500 }
    })
  )
  spec = await (await realFetch(`${server.url}/openapi.json`)).json()
  ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true })
  addFormats(ajv)
  ajv.addSchema({ ...spec, $id: "openapi" })
})

afterAll(async () => {
  globalThis.fetch = realFetch
  await server?.close()
  await backend?.stop()
})

const send = async (g: Generated) => {
  const query = new URLSearchParams(keepLocal(g.query) as Record<string, string>).toString()
  const headers: Record<string, string> = g.operator ? { authorization: `Bearer ${OPERATOR_KEY}` } : {}
  let body: string | undefined
  if (g.body.kind === "json") {
    body = JSON.stringify(keepLocal(g.body.value)) ?? "null"
    headers["content-type"] = "application/json"
  } else if (g.body.kind === "raw") {
    body = g.body.text
    headers["content-type"] = g.body.type
  }
  const withBody = g.method !== "GET" && g.method !== "HEAD"
  const response = await realFetch(`${server.url}${g.path}${query === "" ? "" : `?${query}`}`, {
    method: g.method,
    headers,
    ...(withBody && body !== undefined ? { body } : {})
  })
  const text = await response.text()
  let json: unknown = undefined
  try {
    json = JSON.parse(text)
  } catch {
    // not JSON: judged below
  }
  return { status: response.status, text, json, contentType: response.headers.get("content-type") ?? "" }
}

/** The operation of the document this request reached, if its method and path name one. */
const operationOf = (method: string, path: string) => {
  const pathname = path.split("?")[0]!
  for (const [template, operations] of Object.entries<any>(spec.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`)
    if (pattern.test(pathname) && operations[method.toLowerCase()]) return { template, operation: operations[method.toLowerCase()] }
  }
  return undefined
}

/** What is wrong with one answer, or null: the properties every answer must have. */
const judge = (g: Generated, answer: Awaited<ReturnType<typeof send>>): string | null => {
  if (answer.status >= 500) return `answered ${answer.status}: ${answer.text.slice(0, 300)}`
  const ok = answer.status >= 200 && answer.status < 300
  if (!ok) {
    const body = answer.json as { error?: unknown; message?: unknown } | undefined
    if (typeof body?.error !== "string" || typeof body?.message !== "string") return `a ${answer.status} without {error, message}: ${answer.text.slice(0, 200)}`
  }
  const found = operationOf(g.method, g.path)
  if (found === undefined) return ok ? `a ${answer.status} for a request no operation declares` : null
  const response = found.operation.responses?.[String(answer.status)]
  if (response === undefined) return `${g.method} ${found.template} answered ${answer.status}, which the document does not declare`
  const pointer = `openapi#/paths/${found.template.replace(/~/g, "~0").replace(/\//g, "~1")}/${g.method.toLowerCase()}/responses/${answer.status}/content/application~1json/schema`
  if (response.content?.["application/json"] !== undefined) {
    const validate = ajv.getSchema(pointer) ?? ajv.compile({ $ref: pointer })
    if (!validate(answer.json)) return `${g.method} ${found.template} ${answer.status}: the body does not fit the document: ${ajv.errorsText(validate.errors)}`
  }
  return null
}

describe("fuzzing every endpoint from its schemas", () => {
  test("no 5xx, {error, message} on every non-2xx, statuses and bodies as /openapi.json declares", async () => {
    const failures: Array<string> = []
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...endpoints).chain(requestArb), async (g) => {
        const problem = judge(g, await send(g))
        if (problem !== null) failures.push(`${g.method} ${g.path}: ${problem}`)
        return problem === null
      }),
      { seed, numRuns: 400, endOnFailure: true }
    )
    expect(failures).toEqual([])
    expect(strayTargets).toEqual([])
  }, 60_000)

  test("query parameters generated from the document's own schemas are never refused as invalid", async () => {
    /** An Arbitrary for the subset of JSON Schema this document uses for parameters. */
    const fromJsonSchema = (schema: any): fc.Arbitrary<string> => {
      if (Array.isArray(schema.anyOf)) return fc.oneof(...(schema.anyOf as Array<unknown>).map(fromJsonSchema))
      if (schema.type === "integer") return fc.integer({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6 }).map(String)
      if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum.map(String))
      if (schema.format === "date-time") return fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString())
      if (typeof schema.pattern === "string") return fc.stringMatching(new RegExp(schema.pattern))
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) }).filter((s) =>
        schema.pattern === undefined ? true : new RegExp(schema.pattern).test(s)
      )
    }
    const withQuery = Object.entries<any>(spec.paths).flatMap(([template, operations]) =>
      Object.entries<any>(operations).flatMap(([method, operation]) => {
        // A cursor (format "cursor") is valid only as the service issued it: generated ones are refused by design.
        const params = (operation.parameters ?? []).filter((p: any) => p.in === "query" && p.schema?.format !== "cursor")
        return params.length === 0 ? [] : [{ template, method, params }]
      })
    )
    expect(withQuery.length).toBeGreaterThan(3)
    /**
     * Rules between a query's parameters, which no parameter's own schema can state (the
     * operation's description does): a generated query that breaks one is rightly refused, for
     * that reason and no other. History's span: `from` before `to` (defaults: now, a day before
     * `to`), at most `probes.retentionDays` apart.
     */
    const DAY_MS = 86_400_000
    const refusedByRule = (template: string, query: Record<string, string>, message: string) => {
      if (template !== "/v1/resources/{id}/history") return false
      const toMs = query.to === undefined ? Date.now() : Date.parse(query.to)
      const fromMs = query.from === undefined ? toMs - DAY_MS : Date.parse(query.from)
      if (fromMs >= toMs) return message === "from must be before to"
      return toMs - fromMs > testConfig().probes.retentionDays * DAY_MS && message.includes("probes.retentionDays")
    }
    const refused: Array<string> = []
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...withQuery).chain(({ template, method, params }) =>
          // A parameter the document marks required is always sent; any other may be left out.
          fc.record(
            Object.fromEntries(params.map((p: any) => [p.name, p.required ? fromJsonSchema(p.schema) : fc.option(fromJsonSchema(p.schema), { nil: undefined })]))
          ).map((query) => ({
            template,
            method: method.toUpperCase(),
            path: template.replace(/\{[^}]+\}/g, "stellar-intel.rwa.inspect"),
            query: Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined)) as Record<string, string>
          }))
        ),
        async ({ template, method, path, query }) => {
          // Curation's DELETEs would act: they are asked with a buyer's rights (none), so only their parameters are judged.
          const answer = await send({ method, path, query, body: { kind: "none" }, operator: false })
          const body = answer.json as { error?: string; message?: string }
          const invalid =
            answer.status === 400 && body?.error === "INVALID_REQUEST" && !refusedByRule(template, query, body.message ?? "")
          if (invalid) refused.push(`${method} ${path}?${new URLSearchParams(query)}: ${answer.text}`)
          return !invalid
        }
      ),
      { seed, numRuns: 150, endOnFailure: true }
    )
    expect(refused).toEqual([])
  }, 60_000)
})
