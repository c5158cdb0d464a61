import { afterAll, describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Either } from "effect"
import { type Dial, Dialer, dialPinned, pinnedUrl, Resolver } from "../src/outbound/Connector.js"
import { fetchAnswer, fetchJson, type OutboundRequests } from "../src/outbound/fetchAnswer.js"
import { makeRedactor } from "../src/redaction/redact.js"
import { makeBackendClient } from "../src/x402/FacilitatorClient.js"
import { countingServer } from "./support/countingServer.js"
import { it } from "./support/effectTest.js"
import { freePorts } from "./support/serveProcess.js"

/** What a rebinding attacker wants reached: a service on this host. Every request to it is counted. */
const internal = countingServer(() => Response.json({ secret: "internal" }))

/**
 * Stands in for the public host the name first resolves to: the dialer below sends what is meant
 * for PUBLIC here, on loopback, so no test traffic leaves the machine.
 */
const seenHosts: Array<string | null> = []
const standIn = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (request) => {
    seenHosts.push(request.headers.get("host"))
    return new Response(null, { status: 402, headers: { "payment-required": "e30=" } })
  }
})
afterAll(() => {
  internal.stop()
  standIn.stop(true)
})

const PUBLIC = "93.184.216.34"
const policy: OutboundRequests = {
  allowPrivateTargets: false,
  trustedOrigins: [],
  timeoutMs: 2_000,
  maxBodyBytes: 65_536
}

/** Every address the code under test asked to connect to. */
const dialed: Array<string> = []
const dial: Dial = (url, init) => {
  dialed.push(url.hostname)
  if (url.hostname === PUBLIC) {
    const redirected = new URL(url.href)
    redirected.hostname = "127.0.0.1"
    redirected.port = String(standIn.port)
    return fetch(redirected, init)
  }
  if (url.hostname === "127.0.0.1") return fetch(url, init)
  return Promise.reject(Object.assign(new Error("unreachable in tests"), { code: "ENETUNREACH" }))
}

/** A resolver whose first answer is public and every later one loopback: the rebinding attack. */
const rebinding = () => {
  const asked: Array<string> = []
  const resolve = (host: string) =>
    Effect.sync(() => {
      asked.push(host)
      return asked.length === 1 ? [PUBLIC] : ["127.0.0.1"]
    })
  return { asked, resolve }
}

/** `effect` resolving names with `resolve` and dialing the loopback stand-ins; its outcome as an Either. */
const pinned = <A, E>(effect: Effect.Effect<A, E>, resolve: (host: string) => Effect.Effect<ReadonlyArray<string>>) =>
  Effect.either(effect.pipe(Effect.provideService(Resolver, resolve), Effect.provideService(Dialer, dial)))

describe("connections pinned to the checked address", () => {
  it.live("DNS rebinding: a name that answers public, then loopback, never reaches loopback", () =>
    Effect.gen(function* () {
      const { asked, resolve } = rebinding()
      const url = `http://rebind.test:${internal.port}/paid`
      const first = yield* pinned(fetchAnswer(url, "GET", policy), resolve)
      // The probe went to the address that was checked, with the name in Host.
      expect(Either.isRight(first) && first.right.httpStatus).toBe(402)
      expect(dialed.at(-1)).toBe(PUBLIC)
      expect(seenHosts.at(-1)).toBe(`rebind.test:${internal.port}`)
      // The name now resolves to loopback: the guard refuses before any connection.
      const second = yield* pinned(fetchAnswer(url, "POST", policy, "{}"), resolve)
      expect(Either.isLeft(second) && second.left._tag).toBe("OutboundTargetRefused")
      const document = yield* pinned(fetchJson(url, policy, 1024), resolve)
      expect(Either.isLeft(document) && document.left._tag).toBe("OutboundTargetRefused")
      expect(asked).toEqual(["rebind.test", "rebind.test", "rebind.test"])
      expect(internal.requests()).toBe(0)
      expect(dialed.filter((address) => address === "127.0.0.1")).toEqual([])
    })
  )

  it.live("one lookup per hop: the address checked is the address connected to", () =>
    Effect.gen(function* () {
      const lookups: Array<string> = []
      const resolve = (host: string) =>
        Effect.sync(() => {
          lookups.push(host)
          return [PUBLIC]
        })
      const before = dialed.length
      const answer = yield* pinned(fetchAnswer(`http://api.rebind.test:${internal.port}/x`, "GET", policy), resolve)
      expect(Either.isRight(answer)).toBe(true)
      expect(lookups).toEqual(["api.rebind.test"])
      expect(dialed.slice(before)).toEqual([PUBLIC])
      expect(internal.requests()).toBe(0)
    })
  )

  test("the pinned request keeps the name for Host and for TLS (SNI and the certificate check)", async () => {
    const inits: Array<{ url: string; init: BunFetchRequestInit }> = []
    const record: Dial = async (url, init) => {
      inits.push({ url: url.href, init })
      return new Response("{}")
    }
    const signal = new AbortController().signal
    await dialPinned(
      record,
      { url: new URL("https://api.example.com:8443/p?q=1"), addresses: ["93.184.216.34"] },
      { method: "GET", headers: {}, signal }
    )
    await dialPinned(
      record,
      { url: new URL("http://[2001:4860::1]/p"), addresses: ["2001:4860::1"] },
      { method: "GET", headers: {}, signal }
    )
    expect(inits[0]!.url).toBe("https://93.184.216.34:8443/p?q=1")
    expect(inits[0]!.init.headers).toEqual({ host: "api.example.com:8443" })
    expect(inits[0]!.init.tls?.serverName).toBe("api.example.com")
    expect(inits[0]!.init.redirect).toBe("manual")
    expect(inits[0]!.init.proxy).toBe(false)
    expect(inits[1]!.url).toBe("http://[2001:4860::1]/p")
    expect(inits[1]!.init.tls).toBeUndefined()
    expect(pinnedUrl(new URL("http://a.example/x"), "2001:4860::2").href).toBe("http://[2001:4860::2]/x")
  })

  test("over TLS the certificate is checked against the name, not the address connected to", async () => {
    // A self-signed certificate for pinned.test (test/fixtures/tls), trusted by the dialer below.
    const read = (name: string) => readFileSync(join(import.meta.dir, "fixtures", "tls", name), "utf8")
    const cert = read("pinned.test.cert.pem")
    const tlsServer = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert, key: read("pinned.test.key.pem") },
      fetch: (r) => new Response(r.headers.get("host"))
    })
    const trusting: Dial = (url, init) => fetch(url, { ...init, tls: { ...init.tls, ca: cert } })
    const send = (name: string) =>
      dialPinned(
        trusting,
        { url: new URL(`https://${name}:${tlsServer.port}/`), addresses: ["127.0.0.1"] },
        { method: "GET", headers: {}, signal: AbortSignal.timeout(2_000) }
      )
    try {
      const answer = await send("pinned.test")
      expect(await answer.text()).toBe(`pinned.test:${tlsServer.port}`)
      // The same address under another name: the certificate does not match, so no answer.
      expect(
        await send("other.test").then(
          () => "answered",
          (e: { code?: string }) => e.code
        )
      ).toBe("ERR_TLS_CERT_ALTNAME_INVALID")
    } finally {
      tlsServer.stop(true)
    }
  })

  test("a name with several checked addresses: the next is tried only when the connection is refused", async () => {
    const listening = countingServer(() => new Response("{}"))
    const [closedPort] = freePorts(1)
    try {
      // ::1 first, where nothing listens on this port; 127.0.0.1 answers.
      const vetted = {
        url: new URL(`http://localhost.test:${listening.port}/x`),
        addresses: ["::1", "127.0.0.1"] as const
      }
      const response = await dialPinned((url, init) => fetch(url, init), vetted, {
        method: "GET",
        headers: {},
        signal: AbortSignal.timeout(2_000)
      })
      expect(response.status).toBe(200)
      expect(listening.requests()).toBe(1)
      // A refusal on the only address is the caller's failure.
      const refused = dialPinned(
        (url, init) => fetch(url, init),
        { url: new URL(`http://x.test:${closedPort}/`), addresses: ["127.0.0.1"] },
        { method: "GET", headers: {}, signal: AbortSignal.timeout(2_000) }
      )
      expect(
        await refused.then(
          () => "answered",
          (e: { code?: string }) => e.code
        )
      ).toBe("ECONNREFUSED")
    } finally {
      listening.stop()
    }
  })
})

describe("the facilitator client and redirects", () => {
  it.live("a backend's redirect is an error answer: the API key is never sent to where it points", () =>
    Effect.gen(function* () {
      const elsewhere: Array<string | null> = []
      const thief = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        fetch: (r) => {
          elsewhere.push(r.headers.get("authorization"))
          return Response.json({ kinds: [] })
        }
      })
      const redirecting = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        fetch: () => Response.redirect(`http://127.0.0.1:${thief.port}/supported`, 307)
      })
      try {
        const client = makeBackendClient(
          { id: "b", url: `http://127.0.0.1:${redirecting.port}`, apiKey: "facilitator-secret-key" },
          makeRedactor(["facilitator-secret-key"])
        )
        const supported = yield* Effect.either(client.supported("2 seconds"))
        expect(Either.isLeft(supported) && { kind: supported.left.kind, status: supported.left.status }).toEqual({
          kind: "HttpStatus",
          status: 307
        })
        const verified = yield* Effect.either(client.verify({}, "2 seconds"))
        expect(Either.isLeft(verified) && verified.left.status).toBe(307)
        expect(elsewhere).toEqual([])
      } finally {
        thief.stop(true)
        redirecting.stop(true)
      }
    })
  )
})
