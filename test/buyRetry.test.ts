import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Keypair } from "@stellar/stellar-sdk"
import { HTTPFacilitatorClient, x402ResourceServer } from "@x402/core/server"
import { declarePaymentIdentifierExtension } from "@x402/extensions/payment-identifier"
import { paymentMiddleware } from "@x402/hono"
import { Effect, Schema } from "effect"
import { Hono } from "hono"
import { createServer, type Server, type Socket } from "node:net"
import { ProbesConfig, TESTNET_USDC } from "../src/config.js"
import { payFor } from "../src/payments/payFor.js"
import { stellarServerScheme } from "../src/x402/stellarServerScheme.js"
import { SELLER_PAY_TO, SELLER_RESOURCE_ID, startSellerStack } from "./support/sellerStack.js"
import { request } from "./support/server.js"

/**
 * Resends that cannot pay twice: stock @x402/hono 2.27 sellers settling through Sextant (a fixture
 * facilitator behind it, settling on a fixture ledger), each behind a loopback proxy that lets the
 * first paid request reach the seller, waits until the seller has settled and answered, and then
 * drops the buyer's connection. The buyer cannot know whether it paid.
 */
let stack: Awaited<ReturnType<typeof startSellerStack>>
const sellers: Array<ReturnType<typeof Bun.serve>> = []
const proxies: Array<Server> = []

/** A raw HTTP/1.1 front for `upstream` that drops the connection of the first paid request after the seller answered it. */
const droppingProxy = async (upstream: string) => {
  const seen = { paid: 0, dropped: 0 }
  const server = createServer((socket: Socket) => {
    let buffered = Buffer.alloc(0)
    socket.on("data", async (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk])
      const end = buffered.indexOf("\r\n\r\n")
      if (end < 0) return
      const [line, ...headerLines] = buffered.subarray(0, end).toString("latin1").split("\r\n")
      const headers = new Headers(headerLines.map((h) => [h.slice(0, h.indexOf(":")).trim(), h.slice(h.indexOf(":") + 1).trim()] as [string, string]))
      const length = Number(headers.get("content-length") ?? 0)
      if (buffered.length < end + 4 + length) return
      const body = buffered.subarray(end + 4, end + 4 + length)
      const [method, path] = line!.split(" ")
      headers.delete("host")
      headers.delete("connection")
      const answer = await fetch(`${upstream}${path}`, { method, headers, ...(length > 0 ? { body } : {}) })
      const payload = Buffer.from(await answer.arrayBuffer())
      if (headers.has("payment-signature")) {
        seen.paid++
        if (seen.dropped === 0) {
          seen.dropped++
          socket.destroy()
          return
        }
      }
      const head = [`HTTP/1.1 ${answer.status} ${answer.statusText}`]
      answer.headers.forEach((value, name) => {
        if (!["content-length", "connection", "transfer-encoding", "content-encoding"].includes(name)) head.push(`${name}: ${value}`)
      })
      head.push(`content-length: ${payload.length}`, "connection: close", "", "")
      socket.end(Buffer.concat([Buffer.from(head.join("\r\n"), "latin1"), payload]))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  proxies.push(server)
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("no address")
  return { url: `http://127.0.0.1:${address.port}/weather`, seen }
}

/** A stock seller of GET /weather paying the stack's payee, with or without the payment-identifier extension. */
const seller = (offersIdentifier: boolean) => {
  const core = new x402ResourceServer(new HTTPFacilitatorClient({ url: `${stack.server.url}/x402` })).register("stellar:testnet", stellarServerScheme("exact"))
  const app = new Hono()
  app.use(
    paymentMiddleware(
      {
        "GET /weather": {
          accepts: { scheme: "exact", network: "stellar:testnet", payTo: SELLER_PAY_TO, price: { asset: TESTNET_USDC, amount: "10000" } },
          description: "Weather",
          mimeType: "application/json",
          ...(offersIdentifier ? { extensions: { "payment-identifier": declarePaymentIdentifierExtension(false) } } : {})
        }
      },
      core
    )
  )
  app.get("/weather", (c) => c.json({ tempC: 21 }))
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: app.fetch })
  sellers.push(server)
  return droppingProxy(`http://127.0.0.1:${server.port}`)
}

const buy = (url: string, buyer: Keypair) =>
  Effect.runPromise(
    Effect.either(
      payFor({
        url,
        method: "GET",
        signer: buyer,
        rpcUrl: stack.ledger.rpcUrl,
        inclusionFeeStroops: 10_000,
        deployment: { network: "stellar:testnet", assetContract: TESTNET_USDC },
        maxPrice: 1_000_000n,
        outbound: Schema.decodeSync(ProbesConfig)({ trustedOrigins: [new URL(url).origin], timeoutMs: 5000 })
      })
    )
  )

beforeAll(async () => {
  stack = await startSellerStack()
  // Settlement pays a payee with verification evidence: the stack's resource has the same payee.
  expect((await request(`${stack.server.url}/v1/validate`, { method: "POST", json: { resourceId: SELLER_RESOURCE_ID } })).body.healthy).toBe(true)
})
afterAll(async () => {
  for (const p of proxies) p.close()
  for (const s of sellers) s.stop(true)
  await stack.stop()
})

describe("a paid request whose connection drops after the seller settled", () => {
  test("the seller offers payment-identifier: the same signed payment is resent with the same identifier, settled once", async () => {
    const { url, seen } = await seller(true)
    const buyer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 81))
    const settlesBefore = stack.backend.calls("/settle")
    const result = await buy(url, buyer)
    if (result._tag === "Left") throw new Error(`expected a delivered answer, got ${result.left._tag}: ${JSON.stringify(result.left)}`)
    const paid = result.right
    expect(paid.status).toBe(200)
    expect(JSON.parse(paid.body?.toString() ?? "null")).toEqual({ tempC: 21 })
    expect(paid.paymentIdentifier).toMatch(/^sx_[A-Za-z0-9_-]{13,125}$/)
    expect(paid.sends).toBe(2)
    expect(seen).toEqual({ paid: 2, dropped: 1 })
    // One payment on the ledger, one settle forwarded; the resend was answered from Sextant's journal.
    expect(stack.ledger.transfersBetween(buyer.publicKey(), SELLER_PAY_TO)).toBe(1)
    expect(stack.backend.calls("/settle") - settlesBefore).toBe(1)
    expect(paid.paymentResponse).toMatchObject({ success: true })
    expect(stack.ledger.succeeded(paid.paymentResponse?.transaction ?? "")).toBe(true)
  })

  test("the seller does not offer it: sent once, the outcome reported unknown, never resent", async () => {
    const { url, seen } = await seller(false)
    const buyer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 82))
    const result = await buy(url, buyer)
    expect(result._tag).toBe("Left")
    if (result._tag === "Right") return
    expect(result.left._tag).toBe("PaymentOutcomeUnknown")
    expect(seen).toEqual({ paid: 1, dropped: 1 })
    // It did settle: exactly why a resend without an identifier could have paid twice.
    expect(stack.ledger.transfersBetween(buyer.publicKey(), SELLER_PAY_TO)).toBe(1)
  })
})
