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

import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import Ajv2020 from "ajv/dist/2020"
import addFormats from "ajv-formats"
// Effect's own fast-check, the one its Arbitrary module builds with (two copies do not mix).
import { Arbitrary, FastCheck as fc, Option, Schema } from "effect"
import { SextantApi } from "../src/contract/index.js"
import { apiKeyHash } from "../src/http/authLive.js"
import { type FixtureFacilitator, startFacilitator } from "./fixtures/facilitator.js"
import { fromJsonSchema } from "./support/jsonSchemaArbitrary.js"
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
      // Only what would be fetched: "stellar:testnet" parses as a URL too.
      return !["http:", "https:"].includes(url.protocol) || LOOPBACK_HOSTS.has(url.hostname) ? value : CLOSED
    } catch {
      return value
    }
  }
  if (Array.isArray(value)) return value.map(keepLocal)
  if (typeof value === "object" && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, keepLocal(v)]))
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
  readonly body:
    | { readonly kind: "none" }
    | { readonly kind: "json"; readonly value: unknown }
    | { readonly kind: "raw"; readonly text: string; readonly type: string }
  readonly operator: boolean
}

const bodyArb = (endpoint: Endpoint): fc.Arbitrary<Generated["body"]> => {
  const malformed = fc.oneof(
    fc.jsonValue().map((value) => ({ kind: "json" as const, value })),
    fc.string().map((text) => ({ kind: "raw" as const, text: `{${text}`, type: "application/json" })),
    fc.jsonValue().map((value) => ({ kind: "raw" as const, text: JSON.stringify(value), type: "text/plain" })),
    fc
      .integer({ min: 60, max: 200 })
      .map((depth) => ({ kind: "raw" as const, text: "[".repeat(depth) + "]".repeat(depth), type: "application/json" }))
  )
  return Option.match(endpoint.payloadSchema, {
    onNone: () =>
      fc.oneof({ arbitrary: fc.constant({ kind: "none" as const }), weight: 3 }, { arbitrary: malformed, weight: 1 }),
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
          Object.fromEntries(
            Object.entries((value ?? {}) as Record<string, unknown>)
              .filter(([, v]) => v !== undefined)
              .map(([k, v]) => [k, String(v)])
          )
        ),
        fc.dictionary(fc.constantFrom("limit", "offset", "before", "state", "reason", "type"), anyText, { maxKeys: 3 })
      )
  })

const requestArb = (endpoint: Endpoint): fc.Arbitrary<Generated> =>
  fc.record({
    method: fc.oneof(
      { arbitrary: fc.constant(endpoint.method), weight: 9 },
      { arbitrary: fc.constantFrom("GET", "POST", "PUT", "DELETE"), weight: 1 }
    ),
    path: fc
      .tuple(realIds, anyText)
      .map(([id, other]) =>
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
  globalThis.fetch = Object.assign((input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input))
    if (!LOOPBACK_HOSTS.has(url.hostname)) {
      strayTargets.push(url.href)
      return Promise.reject(new Error(`fuzz: refused a fetch of ${url.origin}`))
    }
    return realFetch(input, init)
  }, realFetch) as typeof fetch
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
  // A cursor is any string the service issued; only the service can tell one from another string.
  ajv.addFormat("cursor", true)
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
  let json: unknown
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
    if (pattern.test(pathname) && operations[method.toLowerCase()])
      return { template, operation: operations[method.toLowerCase()] }
  }
  return undefined
}

/** What is wrong with one answer, or null: the properties every answer must have. */
const judge = (g: Generated, answer: Awaited<ReturnType<typeof send>>): string | null => {
  if (answer.status >= 500) return `answered ${answer.status}: ${answer.text.slice(0, 300)}`
  const ok = answer.status >= 200 && answer.status < 300
  if (!ok) {
    const body = answer.json as { error?: unknown; message?: unknown } | undefined
    if (typeof body?.error !== "string" || typeof body?.message !== "string")
      return `a ${answer.status} without {error, message}: ${answer.text.slice(0, 200)}`
  }
  const found = operationOf(g.method, g.path)
  if (found === undefined) return ok ? `a ${answer.status} for a request no operation declares` : null
  const response = found.operation.responses?.[String(answer.status)]
  if (response === undefined)
    return `${g.method} ${found.template} answered ${answer.status}, which the document does not declare`
  const pointer = `openapi#/paths/${found.template.replace(/~/g, "~0").replace(/\//g, "~1")}/${g.method.toLowerCase()}/responses/${answer.status}/content/application~1json/schema`
  if (response.content?.["application/json"] !== undefined) {
    const validate = ajv.getSchema(pointer) ?? ajv.compile({ $ref: pointer })
    if (!validate(answer.json))
      return `${g.method} ${found.template} ${answer.status}: the body does not fit the document: ${ajv.errorsText(validate.errors)}`
  }
  return null
}

/**
 * What the document cannot state, each a rule docs/reference/http.md lists under "What the
 * document cannot say": a request the document allows may be refused with 400 for one of these
 * (the operations it applies to, the error and the message that name it), and for nothing else.
 */
const CANNOT_STATE: ReadonlyArray<{
  readonly rule: string
  readonly operations: ReadonlyArray<string>
  readonly error: string
  readonly message: RegExp
}> = [
  {
    rule: "a cursor is one the service issued, for this listing and these filters",
    operations: [
      "GET /v1/resources",
      "POST /v1/search",
      "GET /v1/resources/{id}/observations",
      "GET /x402/discovery/search"
    ],
    error: "INVALID_REQUEST",
    message: /^cursor: /
  },
  {
    rule: "cursor or before, not both",
    operations: ["GET /v1/resources/{id}/observations"],
    error: "INVALID_REQUEST",
    message: /^pass either cursor or before, not both$/
  },
  {
    rule: "before is an observation id or a date-time",
    operations: ["GET /v1/resources/{id}/observations"],
    error: "INVALID_REQUEST",
    message: /^before: expected an observation id/
  },
  {
    rule: "from before to, at most probes.retentionDays apart",
    operations: ["GET /v1/resources/{id}/history"],
    error: "INVALID_REQUEST",
    message: /^from must be before to$|at most probes\.retentionDays/
  },
  {
    rule: "optionIndex names one of the resource's payment options",
    operations: ["POST /v1/policies/evaluate"],
    error: "INVALID_REQUEST",
    message: /^optionIndex \d+ is out of range/
  },
  {
    rule: "resourceId or url, exactly one",
    operations: ["POST /v1/validate"],
    error: "INVALID_REQUEST",
    message: /^pass either resourceId or url, not both$|^pass resourceId \(a catalog resource\) or url/
  },
  {
    rule: "origin or url, exactly one; method only with a url; an mcp url without method",
    operations: ["POST /v1/resources/register"],
    error: "INVALID_REQUEST",
    message: /^pass either origin|^method: |^type mcp: /
  },
  {
    rule: "a receipt's response digest and maxAmount add up",
    operations: ["POST /v1/receipts"],
    error: "INVALID_REQUEST",
    message: /^response needs bodySha256|^response\.bodySha256 is not|^payment\.maxAmount .* is below|^sellerReceipt: /
  },
  {
    rule: "a preflight's challenge decodes as x402, with base-unit amounts; a challenge option or requirements; a URL",
    operations: ["POST /v1/preflight"],
    error: "INVALID_REQUEST",
    message:
      /^the challenge: |^requirements\.amount must be base units|^send the challenge |^the challenge's option \d+ asks an amount|^url: send the URL paid for/
  },
  {
    rule: "a Stellar address's checksum",
    operations: [
      "POST /v1/resources/register",
      "POST /v1/receipts",
      "POST /v1/search",
      "POST /v1/routes",
      "POST /v1/policies/evaluate"
    ],
    error: "INVALID_REQUEST",
    message: /valid checksum/
  }
]

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

  test("requests the document allows are refused with 400 only for the rules it cannot state (docs/reference/http.md)", async () => {
    const operations = Object.entries<any>(spec.paths).flatMap(([template, methods]) =>
      Object.entries<any>(methods).map(([method, operation]) => ({ template, method: method.toUpperCase(), operation }))
    )
    /** One request `operation` allows: every parameter and the body drawn from the document's schemas. */
    const allowed = ({ template, method, operation }: (typeof operations)[number]) => {
      const params: Array<any> = operation.parameters ?? []
      const value = (p: any) =>
        p.in === "path" ? fc.oneof(fromJsonSchema(spec, p.schema), realIds) : fromJsonSchema(spec, p.schema)
      const body = operation.requestBody?.content?.["application/json"]?.schema
      return fc
        .record({
          values: fc.record(
            Object.fromEntries(
              params.map((p) => [
                `${p.in}:${p.name}`,
                p.required || p.in === "path" ? value(p) : fc.option(value(p), { nil: undefined })
              ])
            )
          ),
          body: body === undefined ? fc.constant(undefined) : fromJsonSchema(spec, body),
          // A body naming a listed resource reaches the rules behind the lookup, as a path id does.
          listed: fc.boolean()
        })
        .map(({ values, body, listed }) => ({
          template,
          method,
          operation,
          values,
          body:
            listed && typeof (body as any)?.resourceId === "string"
              ? { ...(body as object), resourceId: "stellar-intel.rwa.inspect" }
              : body
        }))
    }
    const refused: Array<string> = []
    const byRule = new Map<string, number>()
    let sent = 0
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...operations).chain(allowed),
        async ({ template, method, operation, values, body }) => {
          const params: Array<any> = operation.parameters ?? []
          // Only requests the document allows are judged: a draw that missed a constraint is not sent.
          const fits = (at: string, value: unknown) =>
            value === undefined || (ajv.getSchema(at) ?? ajv.compile({ $ref: at }))(value)
          const operationAt = `openapi#/paths/${template.replace(/~/g, "~0").replace(/\//g, "~1")}/${method.toLowerCase()}`
          if (!params.every((p, i) => fits(`${operationAt}/parameters/${i}/schema`, values[`${p.in}:${p.name}`])))
            return true
          if (!fits(`${operationAt}/requestBody/content/application~1json/schema`, body)) return true
          sent += 1
          const text = (p: any) => String(values[`${p.in}:${p.name}`])
          const path = template.replace(/\{([^}]+)\}/g, (_, name) =>
            encodeURIComponent(text(params.find((p) => p.in === "path" && p.name === name)))
          )
          const query = Object.fromEntries(
            params
              .filter((p) => p.in === "query" && values[`query:${p.name}`] !== undefined)
              .map((p) => [p.name, text(p)])
          )
          const answer = await send({
            method,
            path,
            query,
            body: body === undefined ? { kind: "none" } : { kind: "json", value: body },
            operator: false
          })
          if (answer.status !== 400) return true
          const found = { error: (answer.json as any)?.error ?? "", message: (answer.json as any)?.message ?? "" }
          const rule = CANNOT_STATE.find(
            (r) =>
              r.operations.includes(`${method} ${template}`) && r.error === found.error && r.message.test(found.message)
          )
          if (rule === undefined)
            refused.push(`${method} ${path}?${new URLSearchParams(query)} ${JSON.stringify(body)}: ${answer.text}`)
          else byRule.set(rule.rule, (byRule.get(rule.rule) ?? 0) + 1)
          return true
        }
      ),
      { seed, numRuns: 400 }
    )
    expect(sent).toBeGreaterThan(200)
    // Every refusal is one of the documented rules: none above their count.
    expect(refused).toEqual([])
    expect([...byRule.keys()].every((rule) => CANNOT_STATE.some((r) => r.rule === rule))).toBe(true)
  }, 120_000)
})
