import { afterAll, beforeEach, describe, expect } from "bun:test"
import { createHash } from "node:crypto"
import {
  Address,
  contract,
  hash,
  Keypair,
  Networks,
  nativeToScVal,
  StrKey,
  scValToNative,
  Transaction,
  xdr
} from "@stellar/stellar-sdk"
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http"
import type { PaymentRequirements } from "@x402/core/types"
import type { Server } from "bun"
import { Effect, Either, Schema } from "effect"
import { ProbesConfig, TESTNET_USDC } from "../src/config.js"
import { decodePayment } from "../src/ledger/transfer.js"
import { type Dial, Dialer, Resolver } from "../src/outbound/Connector.js"
import { buildExactPayment } from "../src/payments/exactPayment.js"
import { type PayForInput, payFor } from "../src/payments/payFor.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { settlePayment, startFixtureLedger } from "./fixtures/ledger.js"
import { startPaidResource } from "./fixtures/paidResource.js"
import { exactRequirements } from "./fixtures/stellarPayment.js"
import { OTHER_ASSET, startX402Fixture } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"

/** An entry's address credentials, `ADDRESS` or `ADDRESS_V2`. */
const credentialsOf = (entry: xdr.SorobanAuthorizationEntry) => {
  const credentials = entry.credentials
  if (credentials.type === "sorobanCredentialsAddressV2") return credentials.addressV2
  if (credentials.type === "sorobanCredentialsAddress") return credentials.address
  throw new Error(`not address credentials: ${credentials.type}`)
}

/**
 * The check the host makes on an address credential (ed25519 account): the signature over the
 * preimage hash, built here as CAP-71 defines it (the address bound in for `ADDRESS_V2`), not by
 * the SDK that signed it.
 */
const authEntryVerifies = (entry: xdr.SorobanAuthorizationEntry, passphrase: string): boolean => {
  const credentials = credentialsOf(entry)
  const common = {
    networkId: hash(new TextEncoder().encode(passphrase)),
    nonce: credentials.nonce,
    signatureExpirationLedger: credentials.signatureExpirationLedger,
    invocation: entry.rootInvocation
  }
  const preimage =
    entry.credentials.type === "sorobanCredentialsAddressV2"
      ? xdr.HashIdPreimage.envelopeTypeSorobanAuthorizationWithAddress(
          new xdr.HashIdPreimageSorobanAuthorizationWithAddress({ ...common, address: credentials.address })
        )
      : xdr.HashIdPreimage.envelopeTypeSorobanAuthorization(new xdr.HashIdPreimageSorobanAuthorization(common))
  const signer = Address.fromScAddress(credentials.address).toString()
  if (credentials.signature.type !== "scvVec") return false
  const signatures = scValToNative(credentials.signature) as Array<{ public_key: Uint8Array; signature: Uint8Array }>
  return (
    signatures.length === 1 &&
    StrKey.encodeEd25519PublicKey(signatures[0]!.public_key) === signer &&
    Keypair.fromPublicKey(signer).verify(hash(preimage.toXdr()), signatures[0]!.signature)
  )
}

const LATEST_LEDGER = 2_000_000
const ledger = startFixtureLedger({ latestLedger: LATEST_LEDGER })

type HopMode = "forward" | "simulation-fails" | "asks-for-more"

/**
 * A JSON-RPC hop in front of the fixture ledger's Soroban RPC: it records every call with its
 * answer, and can answer as a failing or hostile RPC would ("asks-for-more": the recorded
 * authorisation covers ten times the amount).
 */
const startRpcHop = () => {
  const calls: Array<{ method: string; params: Record<string, unknown>; result: Record<string, unknown> | undefined }> =
    []
  let mode: HopMode = "forward"
  const tamper = (result: { results?: Array<{ auth: Array<string> }> }) => {
    const entry = xdr.SorobanAuthorizationEntry.fromXdr(result.results![0]!.auth[0]!, "base64")
    const fn = entry.rootInvocation.function
    if (fn.type !== "sorobanAuthorizedFunctionTypeContractFn") throw new Error("not a contract call")
    const call = fn.contractFn
    const [from, to, amount] = call.args
    const more = nativeToScVal(BigInt(scValToNative(amount!)) * 10n, { type: "i128" })
    const args = new xdr.InvokeContractArgs({
      contractAddress: call.contractAddress,
      functionName: "transfer",
      args: [from!, to!, more]
    })
    const hostile = new xdr.SorobanAuthorizationEntry({
      credentials: entry.credentials,
      rootInvocation: new xdr.SorobanAuthorizedInvocation({
        function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(args),
        subInvocations: []
      })
    })
    return { ...result, results: [{ ...result.results![0]!, auth: [hostile.toXdr("base64")] }] }
  }
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      const body = (await request.json()) as { id: unknown; method: string; params?: Record<string, unknown> }
      const upstream = await fetch(ledger.rpcUrl, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" }
      })
      if (!upstream.ok) return upstream
      const answer = (await upstream.json()) as { result?: Record<string, unknown> }
      if (body.method === "simulateTransaction" && mode === "simulation-fails") {
        answer.result = {
          latestLedger: LATEST_LEDGER,
          error: "HostError: Error(Contract, #10) balance is not sufficient"
        }
      }
      if (body.method === "simulateTransaction" && mode === "asks-for-more") answer.result = tamper(answer.result!)
      calls.push({ method: body.method, params: body.params ?? {}, result: answer.result })
      return Response.json(answer)
    }
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    calls,
    /** The nonce of the authorisation the first simulation recorded. */
    recordedNonce: () => {
      const result = calls.find((c) => c.method === "simulateTransaction")!.result as {
        results: Array<{ auth: Array<string> }>
      }
      const entry = xdr.SorobanAuthorizationEntry.fromXdr(result.results[0]!.auth[0]!, "base64")
      return credentialsOf(entry).nonce
    },
    setMode: (next: HopMode) => {
      mode = next
    },
    stop: () => server.stop(true)
  }
}

const rpc = startRpcHop()
const payer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 42))
const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const deployment = { network: "stellar:testnet", assetContract: TESTNET_USDC }
const resource = { url: "http://127.0.0.1:9/paid", description: "a paid resource", mimeType: "application/json" }

beforeEach(() => {
  rpc.setMode("forward")
  ledger.setFailing("rpc", false)
  rpc.calls.length = 0
})

const build = (requirements: PaymentRequirements, rpcUrl = rpc.url) =>
  Effect.either(
    buildExactPayment({ requirements, resource, signer: payer, rpcUrl, inclusionFeeStroops: 10_000, deployment })
  )

const built = (requirements: PaymentRequirements) =>
  Effect.map(build(requirements), (result) => {
    if (Either.isLeft(result))
      throw new Error(`expected a payment, got ${result.left._tag}: ${JSON.stringify(result.left)}`)
    return result.right
  })

const transactionOf = (xdrBase64: string) => new Transaction(xdrBase64, Networks.TESTNET)
const authOf = (transaction: Transaction) => {
  const op = transaction.operations[0]
  if (op?.type !== "invokeHostFunction") throw new Error("not an InvokeHostFunction")
  return op.auth ?? []
}

describe("buildExactPayment: a Stellar exact payment built and signed through Soroban RPC", () => {
  it.live("transfers the asked asset and amount to the payee, signed by the payer, in the spec's payload shape", () =>
    Effect.gen(function* () {
      const requirements = exactRequirements({ payTo: PAY_TO, amount: "12345", maxTimeoutSeconds: 60 })
      const { paymentPayload, authorization } = yield* built(requirements)

      expect(paymentPayload).toEqual({
        x402Version: 2,
        resource,
        accepted: requirements,
        payload: { transaction: expect.any(String) }
      })
      const xdrBase64 = paymentPayload.payload.transaction as string
      const decoded = decodePayment(xdrBase64, "stellar:testnet")
      expect(Either.getOrThrow(decoded).transfer).toEqual({
        asset: TESTNET_USDC,
        from: payer.publicKey(),
        to: PAY_TO,
        amount: 12345n
      })
      // The payment's id is the network's hash of the transaction, read from the envelope as received.
      expect(Either.getOrThrow(decoded).paymentId).toBe<unknown>(
        Buffer.from(transactionOf(xdrBase64).hash()).toString("hex")
      )
      const wrapped = xdrBase64.replace(/(.{60})/g, "$1\n")
      expect(Either.getOrThrow(decodePayment(wrapped, "stellar:testnet")).paymentId).toBe(
        Either.getOrThrow(decoded).paymentId
      )

      const transaction = transactionOf(xdrBase64)
      expect(transaction.source).toBe(contract.NULL_ACCOUNT)
      const [entry, ...more] = authOf(transaction)
      expect(more).toHaveLength(0)
      expect(authEntryVerifies(entry!, Networks.TESTNET)).toBe(true)
      // The same entry does not verify for another network: the check is not vacuous.
      expect(authEntryVerifies(entry!, Networks.PUBLIC)).toBe(false)
      // Expires ceil(60 s / 5 s) = 12 ledgers after the latest, with the nonce the RPC issued.
      // Signed in the form simulation recorded: ADDRESS_V2 on a Protocol 28 network.
      expect(entry!.credentials.type).toBe("sorobanCredentialsAddressV2")
      const credentials = credentialsOf(entry!)
      expect(credentials.signatureExpirationLedger).toBe(LATEST_LEDGER + 12)
      expect(credentials.nonce).toBe(rpc.recordedNonce())
      expect(authorization).toEqual({
        payer: payer.publicKey(),
        nonce: rpc.recordedNonce().toString(),
        expirationLedger: LATEST_LEDGER + 12
      })

      // Settled as a facilitator does, the payment moves the price and spends exactly that authorisation.
      const settled = settlePayment(ledger, paymentPayload)
      expect(settled.transfer).toEqual({ contract: TESTNET_USDC, from: payer.publicKey(), to: PAY_TO, amount: 12345n })
      expect(settled.nonces).toEqual([
        {
          address: payer.publicKey(),
          nonce: BigInt(authorization.nonce),
          expirationLedger: authorization.expirationLedger
        }
      ])
    })
  )

  it.live(
    "carries the footprint and resources of the simulation with the signature in place, and a fee covering them",
    () =>
      Effect.gen(function* () {
        const { paymentPayload } = yield* built(exactRequirements({ payTo: PAY_TO }))
        const transaction = transactionOf(paymentPayload.payload.transaction as string)
        // A wallet's sequence: the latest ledger, a recording simulation, then one with the signed entry.
        expect(rpc.calls.map((c) => c.method)).toEqual([
          "getLatestLedger",
          "simulateTransaction",
          "simulateTransaction"
        ])
        const second = transactionOf(rpc.calls[2]!.params.transaction as string)
        expect(authOf(second).map((e) => authEntryVerifies(e, Networks.TESTNET))).toEqual([true])
        const enforced = rpc.calls[2]!.result as { transactionData: string; minResourceFee: string }
        const envelope = xdr.expectUnionVariant(transaction.toEnvelope(), "envelopeTypeTx")
        const data = xdr.expectUnionVariant(envelope.v1.tx.ext, "sorobanData").sorobanData
        expect(data.toXdr("base64")).toBe(enforced.transactionData)
        expect(data.resources.footprint.readWrite.length).toBeGreaterThan(0)
        // The fee is the configured inclusion bid plus the simulation's resource fee.
        expect(BigInt(transaction.fee)).toBe(10_000n + BigInt(enforced.minResourceFee))
      })
  )

  it.live(
    "requirements of another scheme, network or asset, or without sponsored fees, are refused before the RPC is asked",
    () =>
      Effect.gen(function* () {
        const refusals = [
          exactRequirements({ payTo: PAY_TO, scheme: "upto" }),
          exactRequirements({ payTo: PAY_TO, network: "stellar:pubnet" }),
          exactRequirements({ payTo: PAY_TO, asset: OTHER_ASSET }),
          exactRequirements({ payTo: PAY_TO, extra: {} }),
          exactRequirements({ payTo: PAY_TO, amount: "0" })
        ]
        for (const requirements of refusals) {
          const result = yield* build(requirements)
          expect(Either.isLeft(result) && result.left._tag).toBe("UnpayableRequirements")
        }
        expect(rpc.calls).toHaveLength(0)
      })
  )

  it.live("an RPC asking the payer to authorise more than the transfer gets no signature", () =>
    Effect.gen(function* () {
      rpc.setMode("asks-for-more")
      const result = yield* build(exactRequirements({ payTo: PAY_TO }))
      expect(Either.isLeft(result) && result.left).toMatchObject({
        _tag: "SimulationRejected",
        reason: "the simulation's authorisation covers something other than the transfer built"
      })
      // Nothing signed left this process: no second simulation.
      expect(rpc.calls.map((c) => c.method)).toEqual(["getLatestLedger", "simulateTransaction"])
    })
  )

  it.live("a failing simulation and an unreachable RPC are typed failures naming the cause", () =>
    Effect.gen(function* () {
      rpc.setMode("simulation-fails")
      const failed = yield* build(exactRequirements({ payTo: PAY_TO }))
      expect(Either.isLeft(failed) && failed.left._tag).toBe("SimulationRejected")
      expect(Either.isLeft(failed) && failed.left.reason).toContain("balance is not sufficient")

      rpc.setMode("forward")
      ledger.setFailing("rpc")
      const down = yield* build(exactRequirements({ payTo: PAY_TO }))
      expect(Either.isLeft(down) && down.left._tag).toBe("SorobanRpcFailure")
      const nobody = yield* build(exactRequirements({ payTo: PAY_TO }), "http://127.0.0.1:1")
      expect(Either.isLeft(nobody) && nobody.left._tag).toBe("SorobanRpcFailure")
    })
  )
})

// ---------------------------------------------------------------------------------------------

const probesTrusting = (...origins: Array<string>) =>
  Schema.decodeSync(ProbesConfig)({ trustedOrigins: origins, timeoutMs: 5000 })

const pay = (input: Partial<PayForInput> & Pick<PayForInput, "url" | "outbound">) =>
  Effect.either(
    payFor({
      method: "GET",
      signer: payer,
      rpcUrl: rpc.url,
      inclusionFeeStroops: 10_000,
      deployment,
      maxPrice: 1_000_000n,
      ...input
    })
  )

const facilitator = startFacilitator()
const seller = startPaidResource({ payTo: PAY_TO, amount: "10000" })
await seller.useFacilitator(facilitator.url)
const sellerOrigin = new URL(seller.url).origin
const x402Fixture = await startX402Fixture()

beforeEach(() => {
  facilitator.setMode("succeed")
  facilitator.requests.length = 0
})

describe("payFor against a stock x402 resource server and a fixture facilitator", () => {
  it.live("pays once: the facilitator settles exactly one payment, and the answer carries its PAYMENT-RESPONSE", () =>
    Effect.gen(function* () {
      const result = yield* pay({ url: seller.url, outbound: probesTrusting(sellerOrigin) })
      const paid = Either.getOrThrow(result)
      expect([facilitator.calls("/verify"), facilitator.calls("/settle")]).toEqual([1, 1])

      const settle = facilitator.requests.find((r) => r.path === "/settle")!.body as {
        paymentPayload: { payload: { transaction: string } }
      }
      const transactionHash = createHash("sha256").update(JSON.stringify(settle)).digest("hex")
      expect(paid).toMatchObject({
        url: seller.url,
        status: 200,
        paymentResponse: {
          success: true,
          transaction: transactionHash,
          network: "stellar:testnet",
          payer: payer.publicKey()
        },
        requirements: {
          scheme: "exact",
          network: "stellar:testnet",
          asset: TESTNET_USDC,
          payTo: PAY_TO,
          amount: "10000"
        },
        amount: "10000",
        contentType: "application/json",
        bodyIsJson: true
      })
      expect(paid.latencyMs).toBeGreaterThan(0)

      // What reached the facilitator is the probe payer's transfer of the price to the payee, signed.
      const settled = settle.paymentPayload.payload.transaction
      expect(Either.getOrThrow(decodePayment(settled, "stellar:testnet")).transfer).toEqual({
        asset: TESTNET_USDC,
        from: payer.publicKey(),
        to: PAY_TO,
        amount: 10000n
      })
      expect(authOf(transactionOf(settled)).map((e) => authEntryVerifies(e, Networks.TESTNET))).toEqual([true])
    })
  )

  it.live("a price above maxPrice is refused before anything is signed or sent", () =>
    Effect.gen(function* () {
      const result = yield* pay({ url: seller.url, outbound: probesTrusting(sellerOrigin), maxPrice: 9_999n })
      expect(Either.isLeft(result) && result.left).toMatchObject({
        _tag: "PriceAboveLimit",
        cheapest: "10000",
        maxPrice: "9999"
      })
      expect(facilitator.requests).toHaveLength(0)
      expect(rpc.calls).toHaveLength(0)
    })
  )

  it.live("the probes' outbound guard applies: an untrusted loopback target is refused before any request", () =>
    Effect.gen(function* () {
      const result = yield* pay({ url: seller.url, outbound: probesTrusting() })
      expect(Either.isLeft(result) && result.left._tag).toBe("OutboundTargetRefused")
      expect(facilitator.requests).toHaveLength(0)
      expect(rpc.calls).toHaveLength(0)
    })
  )

  it.live(
    "a facilitator refusing the payment: the seller answers 402 again, nothing settles, no payment response",
    () =>
      Effect.gen(function* () {
        facilitator.setMode("invalid")
        const paid = Either.getOrThrow(yield* pay({ url: seller.url, outbound: probesTrusting(sellerOrigin) }))
        expect(paid.status).toBe(402)
        expect(paid.paymentResponse).toBeNull()
        expect(facilitator.calls("/settle")).toBe(0)
      })
  )
})

describe("payFor refuses to pay what it should not", () => {
  const probes = () => probesTrusting(x402Fixture.origin)

  it.live("no option on this deployment's network or asset, or a v1 challenge: nothing is signed", () =>
    Effect.gen(function* () {
      for (const path of ["/pubnet", "/other-asset"]) {
        const result = yield* pay({ url: x402Fixture.url(path), outbound: probes() })
        expect(Either.isLeft(result) && result.left._tag).toBe("NoAcceptableOption")
      }
      const v1 = yield* pay({ url: x402Fixture.url("/v1"), outbound: probes() })
      expect(Either.isLeft(v1) && v1.left).toMatchObject({
        _tag: "NoAcceptableOption",
        offered: expect.stringContaining("v1")
      })
      expect(rpc.calls).toHaveLength(0)
    })
  )

  it.live("the caller's refusal is honoured and quoted: a refused option is not paid", () =>
    Effect.gen(function* () {
      const result = yield* pay({
        url: x402Fixture.url("/paid"),
        outbound: probes(),
        refuse: (r) => (r.payTo === PAY_TO ? "not the payee wanted" : null)
      })
      expect(Either.isLeft(result) && result.left).toMatchObject({
        _tag: "NoAcceptableOption",
        offered: expect.stringContaining("(not the payee wanted)")
      })
      expect(rpc.calls).toHaveLength(0)
    })
  )

  it.live("a challenge asking an authorisation valid longer than 600 s is not signed", () =>
    Effect.gen(function* () {
      const seller = yield* ownSeller([exactRequirements({ payTo: PAY_TO, maxTimeoutSeconds: 1_000_000_000 })])
      const result = yield* pay({ url: seller.url, outbound: probesTrusting(seller.origin) })
      expect(Either.isLeft(result) && result.left).toMatchObject({
        _tag: "NoAcceptableOption",
        offered: expect.stringContaining("maxTimeoutSeconds 1000000000 is above the 600 s this buyer signs for")
      })
      expect(rpc.calls).toHaveLength(0)
      expect(seller.payments).toHaveLength(0)
    })
  )

  it.live(
    "DNS rebinding between the priced request and the paid one: the signed payment never reaches the new address",
    () =>
      Effect.gen(function* () {
        const seller = yield* ownSeller([exactRequirements({ payTo: PAY_TO })])
        const port = new URL(seller.url).port
        const PUBLIC = "93.184.216.34"
        let lookups = 0
        const resolve = () => Effect.sync(() => (++lookups === 1 ? [PUBLIC] : ["127.0.0.1"]))
        const dialed: Array<string> = []
        // The public address is played by the seller on loopback; a connection to 127.0.0.1 itself would be the rebinding.
        const dial: Dial = (url, init) => {
          dialed.push(url.hostname)
          const to = new URL(url.href)
          to.hostname = "127.0.0.1"
          return fetch(to, init)
        }
        const result = yield* Effect.either(
          payFor({
            url: `http://seller.rebind.test:${port}/thing`,
            method: "GET",
            signer: payer,
            rpcUrl: rpc.url,
            inclusionFeeStroops: 10_000,
            deployment,
            maxPrice: 1_000_000n,
            outbound: probesTrusting()
          }).pipe(Effect.provideService(Resolver, resolve), Effect.provideService(Dialer, dial))
        )
        expect(Either.isLeft(result) && result.left._tag).toBe("OutboundTargetRefused")
        expect(lookups).toBe(2)
        expect(dialed).toEqual([PUBLIC])
        expect(seller.payments).toHaveLength(0)
      })
  )

  it.live("a free answer, a bare 402 and an undecodable challenge are told apart", () =>
    Effect.gen(function* () {
      expect(yield* pay({ url: x402Fixture.url("/free"), outbound: probes() })).toEqual(
        Either.left(expect.objectContaining({ _tag: "NoPaymentRequired", httpStatus: 200 }))
      )
      const bare = yield* pay({ url: x402Fixture.url("/bare-402"), outbound: probes() })
      expect(Either.isLeft(bare) && bare.left._tag).toBe("ChallengeUnreadable")
      const garbage = yield* pay({ url: x402Fixture.url("/garbage"), outbound: probes() })
      expect(Either.isLeft(garbage) && garbage.left._tag).toBe("ChallengeUnreadable")
    })
  )
})

// ---------------------------------------------------------------------------------------------

/**
 * A hand-made seller: its 402 offers `options`; a paid request is answered as `paidAnswer` says,
 * with a PAYMENT-RESPONSE naming the payment it received. It settles nothing.
 */
const startSeller = (options: ReadonlyArray<PaymentRequirements>) => {
  let paidAnswer: "json" | "html" | "fake-json" | "huge-json" | "hang" = "json"
  const payments: Array<unknown> = []
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      const signature = request.headers.get("payment-signature")
      if (signature === null) {
        const challenge = { x402Version: 2, resource: { url: request.url }, accepts: options }
        return new Response("{}", {
          status: 402,
          headers: { "PAYMENT-REQUIRED": encodePaymentRequiredHeader(challenge as never) }
        })
      }
      payments.push(decodePaymentSignatureHeader(signature))
      if (paidAnswer === "hang") return new Promise<Response>(() => {})
      const headers = {
        "PAYMENT-RESPONSE": encodePaymentResponseHeader({
          success: true,
          transaction: "f".repeat(64),
          network: "stellar:testnet",
          payer: payer.publicKey()
        }),
        "content-type": paidAnswer === "html" ? "text/html" : "application/json"
      }
      const body =
        paidAnswer === "huge-json"
          ? JSON.stringify({ pad: "x".repeat(200_000) })
          : paidAnswer === "fake-json"
            ? "<html>"
            : '{"ok":true}'
      return new Response(body, { status: 200, headers })
    }
  })
  return {
    url: `http://127.0.0.1:${server.port}/thing`,
    origin: `http://127.0.0.1:${server.port}`,
    payments,
    answerPaidWith: (next: typeof paidAnswer) => {
      paidAnswer = next
    },
    stop: () => server.stop(true)
  }
}

/** A hand-made seller stopped when the test ends. */
const ownSeller = (options: ReadonlyArray<PaymentRequirements>) =>
  Effect.acquireRelease(
    Effect.sync(() => startSeller(options)),
    (seller) => Effect.sync(() => seller.stop())
  )

describe("payFor: choosing, and judging the paid answer", () => {
  const OTHER_PAYEE = StrKey.encodeEd25519PublicKey(Buffer.alloc(32, 5))
  const sellerOf = startSeller([
    exactRequirements({ payTo: OTHER_PAYEE, amount: "20000" }),
    exactRequirements({ payTo: PAY_TO, amount: "10000" }),
    exactRequirements({ payTo: PAY_TO, amount: "1", network: "stellar:pubnet" })
  ])
  const probes = () => probesTrusting(sellerOf.origin)
  beforeEach(() => {
    sellerOf.payments.length = 0
    sellerOf.answerPaidWith("json")
  })
  afterAll(() => sellerOf.stop())

  it.live("the cheapest payable option is paid, and only once", () =>
    Effect.gen(function* () {
      const paid = Either.getOrThrow(yield* pay({ url: sellerOf.url, outbound: probes() }))
      expect(paid.requirements.payTo).toBe(PAY_TO)
      expect(paid.amount).toBe("10000")
      expect(sellerOf.payments).toHaveLength(1)
      expect(sellerOf.payments[0]).toMatchObject({
        x402Version: 2,
        accepted: { payTo: PAY_TO, amount: "10000" },
        resource: { url: sellerOf.url }
      })
    })
  )

  it.live(
    "the caller's choice and maxPrice narrow the options: the other payee is paid when it is the only one accepted",
    () =>
      Effect.gen(function* () {
        const paid = Either.getOrThrow(
          yield* pay({
            url: sellerOf.url,
            outbound: probes(),
            refuse: (r) => (r.payTo === OTHER_PAYEE ? null : "another payee")
          })
        )
        expect(paid.amount).toBe("20000")
        const capped = yield* pay({
          url: sellerOf.url,
          outbound: probes(),
          refuse: (r) => (r.payTo === OTHER_PAYEE ? null : "another payee"),
          maxPrice: 19_999n
        })
        expect(Either.isLeft(capped) && capped.left._tag).toBe("PriceAboveLimit")
        expect(sellerOf.payments).toHaveLength(1)
      })
  )

  it.live("whether the paid body is the JSON it declares", () =>
    Effect.gen(function* () {
      const bodyIsJson = () =>
        Effect.map(pay({ url: sellerOf.url, outbound: probes() }), (paid) => Either.getOrThrow(paid).bodyIsJson)
      expect(yield* bodyIsJson()).toBe(true)
      sellerOf.answerPaidWith("html")
      expect(yield* bodyIsJson()).toBe(false)
      sellerOf.answerPaidWith("fake-json")
      expect(yield* bodyIsJson()).toBe(false)
      sellerOf.answerPaidWith("huge-json")
      expect(yield* bodyIsJson()).toBeNull()
    })
  )

  it.live("a paid request left unanswered is an unknown outcome carrying the payment's ledger identity", () =>
    Effect.gen(function* () {
      sellerOf.answerPaidWith("hang")
      const result = yield* pay({ url: sellerOf.url, outbound: probes(), paidTimeoutMs: 300 })
      expect(Either.isLeft(result) && result.left).toMatchObject({
        _tag: "PaymentOutcomeUnknown",
        authorization: {
          payer: payer.publicKey(),
          nonce: rpc.recordedNonce().toString(),
          expirationLedger: LATEST_LEDGER + 12
        }
      })
      expect(sellerOf.payments).toHaveLength(1)
    })
  )
})

afterAll(async () => {
  await rpc.stop()
  ledger.stop()
  await seller.stop()
  await facilitator.stop()
  await x402Fixture.stop()
})
