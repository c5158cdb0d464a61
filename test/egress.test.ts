import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createPublicKey, sign } from "node:crypto"
import { createReceiptJWS, verifyReceiptSignatureJWS } from "@x402/extensions/offer-receipt"
import { Effect } from "effect"
import { didJwkOf, newProviderKey } from "../src/extensions/offerReceipt.js"
import { Dialer } from "../src/outbound/Connector.js"
import { egressRules, installEgressGuard } from "../src/outbound/egress.js"
import { fetchAnswer } from "../src/outbound/fetchAnswer.js"
import { countingServer } from "./support/countingServer.js"
import { it } from "./support/effectTest.js"

/**
 * The egress rule with the guard installed as the command line installs it: a library's own
 * `fetch` to a host nobody configured is refused before any connection, a configured endpoint is
 * reached, a redirect off it is refused, and the Connector still reaches a vetted resource.
 */

const key = newProviderKey()
const signer = (kid: string) => ({
  kid,
  format: "jws" as const,
  algorithm: "EdDSA",
  sign: async (bytes: Uint8Array) => sign(null, bytes, key).toString("base64url")
})

let unlisted: ReturnType<typeof countingServer>
let configured: ReturnType<typeof countingServer>
let resource: ReturnType<typeof countingServer>

beforeAll(() => {
  unlisted = countingServer(() => Response.json({ id: "did:web:attacker" }))
  resource = countingServer(() => new Response("paid", { status: 402 }))
  configured = countingServer(
    () => new Response(null, { status: 302, headers: { location: `http://127.0.0.1:${unlisted.port}/admin` } })
  )
})
afterAll(() => {
  unlisted.stop()
  configured.stop()
  resource.stop()
})

/** Runs `body` with the guard installed for `allowed` only, and always puts the platform's fetch back. */
const guarded = async <A>(allowed: ReadonlyArray<string>, body: () => Promise<A>) => {
  const uninstall = installEgressGuard(egressRules(allowed))
  try {
    return await body()
  } finally {
    uninstall()
  }
}

describe("the egress guard", () => {
  test("a library resolving a did:web key id with its own fetch is refused; the unlisted listener counts no connection", async () => {
    const receipt = await createReceiptJWS(
      { resourceUrl: "https://seller.example/x", payer: "GPAYER", network: "stellar:testnet" },
      signer(`did:web:127.0.0.1%3A${unlisted.port}:admin:secret`)
    )
    const before = unlisted.requests()
    const outcome = await guarded([`http://127.0.0.1:${configured.port}/x402`], () =>
      verifyReceiptSignatureJWS(receipt).then(
        () => "verified",
        (e: unknown) => String(e)
      )
    )
    expect(outcome).toContain("refused")
    expect(unlisted.requests() - before).toBe(0)
  })

  test("a configured endpoint is reached; its redirect to an unlisted port is refused, not followed", async () => {
    const before = { configured: configured.requests(), unlisted: unlisted.requests() }
    const outcome = await guarded([`http://127.0.0.1:${configured.port}/x402`], () =>
      fetch(`http://127.0.0.1:${configured.port}/x402/verify`, { method: "POST", body: "{}" }).then(
        (r) => `answered ${r.status}`,
        (e: unknown) => String(e)
      )
    )
    expect(outcome).toContain(`127.0.0.1:${unlisted.port} refused`)
    expect(configured.requests() - before.configured).toBe(1)
    expect(unlisted.requests() - before.unlisted).toBe(0)
  })

  test("the Connector's vetted requests are not the global fetch's: a probe still reaches its resource", async () => {
    const before = resource.requests()
    const answer = await guarded([], () =>
      it.run(
        fetchAnswer(`http://127.0.0.1:${resource.port}/paid`, "GET", {
          allowPrivateTargets: true,
          trustedOrigins: [],
          timeoutMs: 2000,
          maxBodyBytes: 65536
        }).pipe(
          Effect.provideService(Dialer, (url, init) => globalThis.fetch(url, init)),
          Effect.either
        )
      )
    )
    // Through the global fetch the probe is refused...
    expect(answer._tag).toBe("Left")
    const dialed = await guarded([], () =>
      it.run(
        fetchAnswer(`http://127.0.0.1:${resource.port}/paid`, "GET", {
          allowPrivateTargets: true,
          trustedOrigins: [],
          timeoutMs: 2000,
          maxBodyBytes: 65536
        })
      )
    )
    // ...through the Connector's own dialer it is answered.
    expect(dialed.httpStatus).toBe(402)
    expect(resource.requests() - before).toBe(1)
  })

  test("the did:jwk id of a key names that key", () => {
    expect(didJwkOf(createPublicKey(key))).toStartWith("did:jwk:")
  })
})
