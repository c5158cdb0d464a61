import { Database } from "bun:sqlite"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { apiKeyHash } from "../src/http/authLive.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startPaidResource } from "./fixtures/paidResource.js"
import { buildExactPayment, exactRequirements, seededBuyer, settleBody } from "./fixtures/stellarPayment.js"
import { facilitatorsAnswered, request, startServer, testConfig } from "./support/server.js"

const OPERATOR_KEY = "operator-secret-key"
const BUYER_KEY = "buyer-secret-key"
const PAYEE = "GDVEU3DD4KOFECV66VIHWEZOYX4ZKR3WV27L464SIIPOU2IUI3JCZA57"
const OTHER_PAYEE = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const RESOURCE_ID = "seller.rwa.inspect"
const operator = { authorization: `Bearer ${OPERATOR_KEY}` }
const buyer = { authorization: `Bearer ${BUYER_KEY}` }

const backend = startFacilitator()
const resource = startPaidResource({ payTo: PAYEE, amount: "10000" })
/** A second seller, entered by `/v1/validate` (source "validate"): an entry no file brings back. */
const validated = startPaidResource({ payTo: OTHER_PAYEE, amount: "10000" })
let server: Awaited<ReturnType<typeof startServer>>
let validatedId = ""
/** A store file, so the test reads the operator log with its own SQLite connection. */
const folder = mkdtempSync(join(tmpdir(), "sextant-curation-"))
const database = join(folder, "sextant.db")

const call = (method: string, path: string, headers: Record<string, string> = {}, json?: unknown) =>
  request(`${server.url}${path}`, { method, headers, ...(json === undefined ? {} : { json }) })

/** The five operator endpoints, each with a body it would accept. */
const operatorCalls = (id: string) =>
  [
    ["POST", `/v1/resources/${id}/quarantine`, { reason: "investigating" }],
    ["DELETE", `/v1/resources/${id}/quarantine`, undefined],
    ["POST", `/v1/resources/${id}/list`, {}],
    ["POST", `/v1/resources/${id}/unlist`, { reason: "stale" }],
    ["DELETE", `/v1/resources/${id}`, undefined]
  ] as const

const route = () => call("POST", "/v1/routes", {}, { capability: "rwa.inspect" })
let seed = 80
const settle = async () => {
  const requirements = exactRequirements({ payTo: PAYEE })
  const payment = await buildExactPayment(requirements, { buyer: seededBuyer(seed++) })
  return call("POST", "/x402/settle", buyer, settleBody(payment, requirements))
}
const probe = (resourceId: string) => call("POST", "/v1/validate", operator, { resourceId })
const detail = (id: string) => call("GET", `/v1/resources/${id}`)

beforeAll(async () => {
  const base = testConfig()
  server = await startServer(
    testConfig({
      database,
      facilitators: [{ id: "a", url: backend.url }],
      apiKeys: [
        { principal: "ops", sha256: apiKeyHash(OPERATOR_KEY), role: "operator" },
        { principal: "agent-1", sha256: apiKeyHash(BUYER_KEY) }
      ],
      catalog: [resource.catalogEntry(RESOURCE_ID)],
      probes: { ...base.probes, allowPrivateTargets: true }
    })
  )
  await facilitatorsAnswered(server.url)
  await resource.useFacilitator(`${server.url}/x402`, BUYER_KEY)
  await validated.useFacilitator(`${server.url}/x402`, BUYER_KEY)
  const first = await probe(RESOURCE_ID)
  if (first.body.healthy !== true)
    throw new Error(`the seller's resource did not probe healthy: ${JSON.stringify(first.body)}`)
  const other = await call("POST", "/v1/validate", operator, { url: validated.url })
  if (other.body.healthy !== true)
    throw new Error(`the validated resource did not probe healthy: ${JSON.stringify(other.body)}`)
  validatedId = other.body.resourceId
})
afterAll(async () => {
  await server.close()
  await backend.stop()
  await resource.stop()
  await validated.stop()
  rmSync(folder, { recursive: true, force: true })
})

describe("operator curation refuses anyone but an operator", () => {
  test("a buyer key gets 403 OPERATOR_ONLY, no key or an unknown key 401, and nothing changes", async () => {
    for (const [method, path, json] of operatorCalls(RESOURCE_ID)) {
      const asBuyer = await call(method, path, buyer, json)
      expect({ path, method, status: asBuyer.status, error: asBuyer.body.error }).toEqual({
        path,
        method,
        status: 403,
        error: "OPERATOR_ONLY"
      })
      expect(asBuyer.body.message).toContain("agent-1")
      const anonymous = await call(method, path, {}, json)
      expect(anonymous.status).toBe(401)
      expect(anonymous.body.error).toBe("UNAUTHORIZED")
      expect((await call(method, path, { authorization: "Bearer nope" }, json)).status).toBe(401)
    }
    const after = await detail(RESOURCE_ID)
    expect(after.body.resource.status).toBe("PAYMENT_VERIFIED")
    expect(after.body.listing).toEqual({ listed: true, source: "config", trusted: true })
    expect(after.body.curation.quarantine).toBeNull()
  })

  test("open mode (no keys configured) refuses curation with 403: a change needs an author", async () => {
    const open = await startServer(testConfig())
    try {
      for (const [method, path, json] of operatorCalls("anything")) {
        const answer = await request(`${open.url}${path}`, { method, ...(json === undefined ? {} : { json }) })
        expect({ path, method, status: answer.status, error: answer.body.error }).toEqual({
          path,
          method,
          status: 403,
          error: "OPERATOR_ONLY"
        })
        expect(answer.body.message).toContain("open mode")
      }
    } finally {
      await open.close()
    }
  })

  test("quarantine and unlist need a reason; an unknown resource is 404", async () => {
    const noReason = await call("POST", `/v1/resources/${RESOURCE_ID}/quarantine`, operator, {})
    expect(noReason.status).toBe(400)
    expect(noReason.body.message).toContain("reason")
    expect((await call("POST", `/v1/resources/${RESOURCE_ID}/unlist`, operator, { reason: "" })).status).toBe(400)
    const missing = await call("POST", "/v1/resources/no-such/quarantine", operator, { reason: "x" })
    expect(missing.status).toBe(404)
    expect(missing.body.error).toBe("NOT_FOUND")
    expect((await call("DELETE", "/v1/resources/no-such", operator)).status).toBe(404)
  })
})

describe("an operator quarantine", () => {
  test("stops routes and settles to the resource, survives a healthy probe, and is shown with its actor and reason", async () => {
    const before = await route()
    expect(before.body.selected?.resourceId).toBe(RESOURCE_ID)

    const put = await call("POST", `/v1/resources/${RESOURCE_ID}/quarantine`, operator, {
      reason: "payee reported compromised"
    })
    expect(put.status).toBe(200)
    expect(put.body.action).toMatchObject({
      resourceId: RESOURCE_ID,
      action: "quarantine",
      actor: "ops",
      reason: "payee reported compromised"
    })
    expect(put.body.resource).toMatchObject({
      status: "QUARANTINED",
      verificationLevel: 2,
      curation: { quarantine: { actor: "ops", reason: "payee reported compromised" } }
    })

    const routed = await route()
    expect(routed.body.selected).toBeNull()
    expect(routed.body.rejected.find((r: { resourceId: string }) => r.resourceId === RESOURCE_ID)?.codes).toContain(
      "QUARANTINED"
    )

    const settlesBefore = backend.calls("/settle")
    const refused = await settle()
    expect(refused.status).toBe(403)
    expect(refused.body).toMatchObject({ error: "POLICY_DENIED", code: "QUARANTINED" })
    expect(backend.calls("/settle")).toBe(settlesBefore)

    // A healthy probe re-derives the status from evidence; the operator's quarantine holds.
    const probed = await probe(RESOURCE_ID)
    expect(probed.body).toMatchObject({ healthy: true, status: "QUARANTINED" })
    const shown = await detail(RESOURCE_ID)
    expect(shown.body.resource.status).toBe("QUARANTINED")
    expect(shown.body.curation.quarantine).toMatchObject({ actor: "ops", reason: "payee reported compromised" })
    expect(shown.body.transitions[0]).toMatchObject({
      to: "QUARANTINED",
      reason: "quarantined by operator ops: payee reported compromised"
    })
    expect((await route()).body.selected).toBeNull()
  })

  test("lifting it restores the earned status, routes and settles", async () => {
    const lifted = await call(
      "DELETE",
      `/v1/resources/${RESOURCE_ID}/quarantine?reason=cleared%20by%20the%20provider`,
      operator
    )
    expect(lifted.status).toBe(200)
    expect(lifted.body.action).toMatchObject({
      action: "unquarantine",
      actor: "ops",
      reason: "cleared by the provider"
    })
    expect(lifted.body.resource).toMatchObject({ status: "PAYMENT_VERIFIED", curation: { quarantine: null } })
    expect((await route()).body.selected?.resourceId).toBe(RESOURCE_ID)
    const settlesBefore = backend.calls("/settle")
    const paid = await settle()
    expect(paid.status).toBe(200)
    expect(backend.calls("/settle")).toBe(settlesBefore + 1)
  })
})

describe("listing and deletion", () => {
  test("unlist hides the resource from discovery and routes; list brings it back; both stored with the operator", async () => {
    const unlisted = await call("POST", `/v1/resources/${RESOURCE_ID}/unlist`, operator, {
      reason: "provider asked for a pause"
    })
    expect(unlisted.status).toBe(200)
    expect(unlisted.body.resource.listing).toEqual({ listed: false, source: "config", trusted: true })
    const listing = await call("GET", "/v1/resources")
    expect(listing.body.resources.map((r: { resource: { id: string } }) => r.resource.id)).not.toContain(RESOURCE_ID)
    expect((await route()).body.selected).toBeNull()
    const shown = await detail(RESOURCE_ID)
    expect(shown.body.curation.lastListingChange).toMatchObject({
      listed: false,
      actor: "ops",
      reason: "provider asked for a pause"
    })

    const listed = await call("POST", `/v1/resources/${RESOURCE_ID}/list`, operator, {})
    expect(listed.status).toBe(200)
    expect(listed.body.resource.listing).toEqual({ listed: true, source: "config", trusted: true })
    expect(listed.body.resource.curation.lastListingChange).toMatchObject({
      listed: true,
      actor: "ops",
      reason: "listed by an operator"
    })
    expect((await route()).body.selected?.resourceId).toBe(RESOURCE_ID)
  })

  test("a catalog-file entry cannot be deleted (409 CONFIG_MANAGED); another entry is deleted, and the log keeps who and why", async () => {
    const refused = await call("DELETE", `/v1/resources/${RESOURCE_ID}`, operator)
    expect(refused.status).toBe(409)
    expect(refused.body.error).toBe("CONFIG_MANAGED")
    expect((await detail(RESOURCE_ID)).status).toBe(200)

    expect((await detail(validatedId)).body.listing.source).toBe("validate")
    const deleted = await call("DELETE", `/v1/resources/${validatedId}?reason=duplicate%20entry`, operator)
    expect(deleted.status).toBe(200)
    expect(deleted.body).toMatchObject({
      action: { resourceId: validatedId, action: "delete", actor: "ops", reason: "duplicate entry" },
      resource: null
    })
    expect((await detail(validatedId)).status).toBe(404)

    const store = new Database(database, { readonly: true })
    const actions = (id: string) =>
      store
        .query("SELECT action, actor, reason FROM operator_actions WHERE resource_id = ? ORDER BY id DESC")
        .all(id) as Array<{
        action: string
        actor: string
        reason: string
      }>
    expect(actions(RESOURCE_ID).map((a) => [a.action, a.actor])).toEqual([
      ["list", "ops"],
      ["unlist", "ops"],
      ["unquarantine", "ops"],
      ["quarantine", "ops"]
    ])
    expect(actions(validatedId)).toEqual([{ action: "delete", actor: "ops", reason: "duplicate entry" }])
    const listingLog = store
      .query("SELECT listed, actor, reason FROM listing_changes WHERE resource_id = ? ORDER BY id DESC LIMIT 1")
      .get(RESOURCE_ID)
    expect(listingLog).toEqual({ listed: 1, actor: "ops", reason: "listed by an operator" })
    store.close()
  })
})
