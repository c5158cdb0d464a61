import { afterAll, describe, expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Logger } from "effect"
import { redacting } from "../src/redaction/RedactingLogger.js"
import { makeRedactor, REDACTED, secretsOf } from "../src/redaction/redact.js"
import { it } from "./support/effectTest.js"
import { pollUntil } from "./support/poll.js"
import { type SellerProcess, startSellerProcess } from "./support/sellerProcess.js"
import { request, testConfig } from "./support/server.js"

const FACILITATOR_KEY = "fk_live_Zq81xWm2Lp0aQ7rT"

describe("the redactor (pure)", () => {
  const redactor = makeRedactor([FACILITATOR_KEY, "short"])

  test("a configured secret is replaced in every form it is echoed in; short ones are not searched for", () => {
    expect(redactor.text(`key=${FACILITATOR_KEY} and "${encodeURIComponent(FACILITATOR_KEY)}"`)).toBe(
      `key=${REDACTED} and "${REDACTED}"`
    )
    expect(redactor.text("a short answer")).toBe("a short answer")
  })

  test("credentials are replaced by shape: Authorization headers, bearer tokens, URL credentials, Stellar seeds", () => {
    const echoed = JSON.stringify({ authorization: "Bearer sk_unknown_1234567890", "x-api-key": "abcdef123456" })
    const out = redactor.text(`upstream said ${echoed}`)
    expect(out).not.toContain("sk_unknown_1234567890")
    expect(out).not.toContain("abcdef123456")
    expect(redactor.text("Authorization: Basic dXNlcjpwYXNzd29yZA==")).toBe(`Authorization: ${REDACTED}`)
    expect(redactor.text("sent Bearer eyJhbGciOiJIUzI1NiJ9.e30.x to it")).toBe(`sent Bearer ${REDACTED} to it`)
    expect(redactor.text("postgres://sextant:hunter2hunter2@db:5432/x")).toBe(`postgres://${REDACTED}@db:5432/x`)
    const seed = `S${"A".repeat(55)}`
    expect(redactor.text(`seed ${seed}`)).toBe(`seed ${REDACTED}`)
  })

  test("ordinary text (payer addresses, transaction hashes, reasons) is left as it is", () => {
    const text = `invalid_exact_stellar_payload_wrong_amount: GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464 tx ${"ab".repeat(32)}`
    expect(redactor.text(text)).toBe(text)
    expect(redactor.text("basic checks passed; token transfer failed")).toBe(
      "basic checks passed; token transfer failed"
    )
  })

  test("values keep their shape, errors their class; every string inside is redacted", () => {
    class Tagged extends Error {
      readonly _tag = "Tagged"
    }
    const error = new Tagged(`failed with ${FACILITATOR_KEY}`)
    const out = redactor.value({ list: [`Bearer ${FACILITATOR_KEY}`], error, n: 1 })
    expect(out.list).toEqual([`Bearer ${REDACTED}`])
    expect(out.n).toBe(1)
    expect(out.error).toBeInstanceOf(Tagged)
    expect(out.error.message).toBe(`failed with ${REDACTED}`)
    expect(out.error.stack).not.toContain(FACILITATOR_KEY)
  })

  test("the secrets of a config: facilitator keys, the HMAC secret, the vertical's key, the database password", () => {
    const config = testConfig({
      facilitators: [{ id: "a", url: "http://127.0.0.1:9", apiKey: FACILITATOR_KEY }],
      signer: { hmacSecret: "hmac-secret-0123456789" },
      database: "postgres://u:pg-password-123@127.0.0.1:5432/db"
    })
    expect(
      secretsOf({ ...config, vertical: { ...config.vertical, facilitatorApiKey: "vertical-key-123" } }).sort()
    ).toEqual(
      [FACILITATOR_KEY, "hmac-secret-0123456789", "pg-password-123", "pg-password-123", "vertical-key-123"].sort()
    )
  })

  it.live("a log line and its cause pass through the redactor before they are written", () =>
    Effect.gen(function* () {
      const lines: Array<string> = []
      const capture = Logger.map(Logger.logfmtLogger, (line) => void lines.push(line))
      yield* Effect.logError(
        `backend said Authorization: Bearer ${FACILITATOR_KEY}`,
        new Error(`cause quoting ${FACILITATOR_KEY}`)
      ).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, redacting(capture, redactor))))
      expect(lines).toHaveLength(1)
      expect(lines[0]).not.toContain(FACILITATOR_KEY)
      expect(lines[0]).toContain(REDACTED)
    })
  )
})

describe("a facilitator that echoes the request headers in its 500 body", () => {
  let stack: SellerProcess
  afterAll(async () => {
    await stack?.stop()
  })

  test("its key appears in no response, page, stored row or log line", async () => {
    // Polls 2 s apart: lastError is read well before the next poll clears it.
    stack = await startSellerProcess({ facilitatorPollSeconds: 2 }, { apiKey: FACILITATOR_KEY })
    const child = await stack.launch()
    await stack.validate(child)
    stack.backend.setMode("echo500")
    const body = await stack.settleBodyFor(3)

    // Raw throughout: a leak would sit in the bytes on the wire, which a decoded answer could drop.
    // The key really goes to the backend, which really echoes it.
    const verify = await request(`${child.url}/x402/verify`, { method: "POST", json: body })
    expect(stack.backend.requests.at(-1)?.authorization).toBe(`Bearer ${FACILITATOR_KEY}`)
    expect(verify.status).toBe(502)
    expect(verify.body.error).toBe("ALL_FACILITATORS_FAILED")
    expect(verify.body.message).toContain("answered 500: upstream error")
    expect(verify.body.message).toContain(`"authorization":"${REDACTED}"`)

    // One failed verify leaves the backend healthy (the breaker needs a streak of them).
    await pollUntil(
      "the backend is healthy again",
      async () => (await request(`${child.url}/x402/facilitators`)).body.facilitators[0].healthy,
      (healthy) => healthy === true,
      { timeoutMs: 5_000, everyMs: 20 }
    )
    const settle = await request(`${child.url}/x402/settle`, { method: "POST", json: body })
    expect(settle.status).toBe(502)
    expect(settle.body.error).toBe("SETTLEMENT_INDETERMINATE")
    const id = /Settlement ([0-9a-f-]{36})/.exec(settle.body.message)?.[1]
    const record = await request(`${child.url}/x402/settlements/${id}`)
    expect(record.body.errors[0].error).toContain(REDACTED)

    const facilitators = await request(`${child.url}/x402/facilitators`)
    expect(facilitators.body.facilitators[0].lastError).toContain(REDACTED)
    const texts = [
      JSON.stringify(verify.body),
      JSON.stringify(settle.body),
      JSON.stringify(record.body),
      JSON.stringify(facilitators.body),
      JSON.stringify((await request(`${child.url}/health/dependencies`)).body),
      JSON.stringify((await request(`${child.url}/x402/settlements`)).body)
    ]
    for (const text of texts) expect(text).not.toContain(FACILITATOR_KEY)

    // Every byte the process wrote: its log, the store (WAL included), the folder's other files.
    await child.kill()
    for (const file of readdirSync(stack.dir)) {
      if (file === "config.json") continue
      expect({ file, leaks: readFileSync(join(stack.dir, file)).includes(FACILITATOR_KEY) }).toEqual({
        file,
        leaks: false
      })
    }
  }, 30_000)
})
