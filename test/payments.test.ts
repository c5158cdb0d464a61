import { afterAll, beforeEach, describe, expect, test } from "bun:test"
import { FetchHttpClient } from "@effect/platform"
import {
  Address,
  contract,
  hash,
  Keypair,
  Networks,
  scValToNative,
  SorobanDataBuilder,
  StrKey,
  Transaction,
  TransactionBuilder,
  xdr
} from "@stellar/stellar-sdk"
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http"
import type { PaymentRequirements } from "@x402/core/types"
import type { Server } from "bun"
import { createHash } from "node:crypto"
import { Effect, Either, Schema } from "effect"
import { ProbesConfig, TESTNET_USDC } from "../src/config.js"
import { buildExactPayment } from "../src/payments/exactPayment.js"
import { payFor, type PayForInput } from "../src/payments/payFor.js"
import { decodePayment } from "../src/settlement/transfer.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startPaidResource } from "./fixtures/paidResource.js"
import { exactRequirements } from "./fixtures/stellarPayment.js"
import { OTHER_ASSET, startX402Fixture } from "./fixtures/x402Resource.js"

/*
 * A local Soroban RPC (JSON-RPC on 127.0.0.1) answering what a wallet asks while building a
 * payment: getLatestLedger, and simulateTransaction of a SEP-41 transfer. Like the host, it
 * records the payer's authorisation when the transaction carries none (a fresh nonce, no
 * signature) and enforces it when it does: a missing, expired or wrong signature fails the
 * simulation. Kept in this file until test/fixtures/ledger.ts offers the same.
 */
const LATEST_LEDGER = 2_000_000
const MIN_RESOURCE_FEE = 73_500
/** Instructions each simulation reports: checking a signature costs more than recording. */
const RECORDING_INSTRUCTIONS = 1_000_000
const ENFORCING_INSTRUCTIONS = 1_400_000

/** The check the host makes on an address credential (ed25519 account): the signature over the preimage hash. */
const authEntryVerifies = (entry: xdr.SorobanAuthorizationEntry, passphrase: string): boolean => {
  const credentials = entry.credentials().address()
  const preimage = xdr.HashIdPreimage.envelopeTypeSorobanAuthorization(
    new xdr.HashIdPreimageSorobanAuthorization({
      networkId: hash(Buffer.from(passphrase)),
      nonce: credentials.nonce(),
      signatureExpirationLedger: credentials.signatureExpirationLedger(),
      invocation: entry.rootInvocation()
    })
  )
  const signer = Address.fromScAddress(credentials.address()).toString()
  if (credentials.signature().switch() !== xdr.ScValType.scvVec()) return false
  const signatures = scValToNative(credentials.signature()) as Array<{ public_key: Buffer; signature: Buffer }>
  return (
    signatures.length === 1 &&
    StrKey.encodeEd25519PublicKey(signatures[0]!.public_key) === signer &&
    Keypair.fromPublicKey(signer).verify(hash(preimage.toXDR()), signatures[0]!.signature)
  )
}

type RpcMode = "normal" | "down" | "simulation-fails" | "asks-for-more"

const startRpc = () => {
  const calls: Array<{ method: string; params: Record<string, unknown> }> = []
  const issuedNonces: Array<bigint> = []
  let mode: RpcMode = "normal"
  const contractInstance = (asset: string) =>
    xdr.LedgerKey.contractData(
      new xdr.LedgerKeyContractData({
        contract: new Address(asset).toScAddress(),
        key: xdr.ScVal.scvLedgerKeyContractInstance(),
        durability: xdr.ContractDataDurability.persistent()
      })
    )

  const simulate = (params: Record<string, unknown>) => {
    const tx = TransactionBuilder.fromXDR(params.transaction as string, Networks.TESTNET) as Transaction
    const op = tx.operations[0]
    if (op?.type !== "invokeHostFunction") return { latestLedger: LATEST_LEDGER, error: "not a contract invocation" }
    if (mode === "simulation-fails") return { latestLedger: LATEST_LEDGER, error: "HostError: Error(Contract, #10) balance is not sufficient" }
    const call = op.func.invokeContract()
    const [from, to, amount] = call.args()
    const asset = Address.fromScAddress(call.contractAddress()).toString()
    const enforcing = (op.auth ?? []).length > 0
    if (enforcing) {
      const bad = op.auth!.find(
        (e) => !authEntryVerifies(e, Networks.TESTNET) || e.credentials().address().signatureExpirationLedger() < LATEST_LEDGER
      )
      if (bad) return { latestLedger: LATEST_LEDGER, error: "HostError: Error(Auth, InvalidAction)" }
    }
    const nonce = BigInt.asIntN(64, BigInt(`0x${createHash("sha256").update(String(calls.length)).digest("hex").slice(0, 16)}`))
    // "asks-for-more": an RPC trying to have the payer authorise ten times the amount.
    const authorisedArgs = mode === "asks-for-more" ? [from!, to!, xdr.ScVal.scvI128(new xdr.Int128Parts({ hi: xdr.Int64.fromString("0"), lo: xdr.Uint64.fromString(String(BigInt(scValToNative(amount!)) * 10n)) }))] : call.args()
    const recorded = new xdr.SorobanAuthorizationEntry({
      credentials: xdr.SorobanCredentials.sorobanCredentialsAddress(
        new xdr.SorobanAddressCredentials({
          address: Address.fromScVal(from!).toScAddress(),
          nonce: xdr.Int64.fromString(nonce.toString()),
          signatureExpirationLedger: 0,
          signature: xdr.ScVal.scvVoid()
        })
      ),
      rootInvocation: new xdr.SorobanAuthorizedInvocation({
        function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(
          new xdr.InvokeContractArgs({ contractAddress: call.contractAddress(), functionName: "transfer", args: authorisedArgs })
        ),
        subInvocations: []
      })
    })
    if (!enforcing) issuedNonces.push(nonce)
    const data = new SorobanDataBuilder()
      .setReadOnly([contractInstance(asset)])
      .setResources(enforcing ? ENFORCING_INSTRUCTIONS : RECORDING_INSTRUCTIONS, 1_200, 400)
      .setResourceFee(MIN_RESOURCE_FEE)
      .build()
    return {
      latestLedger: LATEST_LEDGER,
      minResourceFee: String(MIN_RESOURCE_FEE),
      transactionData: data.toXDR("base64"),
      results: [{ auth: enforcing ? [] : [recorded.toXDR("base64")], xdr: xdr.ScVal.scvVoid().toXDR("base64") }],
      events: []
    }
  }

  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      const body = (await request.json()) as { id: unknown; method: string; params?: Record<string, unknown> }
      calls.push({ method: body.method, params: body.params ?? {} })
      if (mode === "down") return new Response("upstream connect error", { status: 503 })
      const result =
        body.method === "getLatestLedger"
          ? { id: "ab".repeat(32), sequence: LATEST_LEDGER, protocolVersion: 23 }
          : body.method === "simulateTransaction"
            ? simulate(body.params ?? {})
            : undefined
      return Response.json(
        result === undefined
          ? { jsonrpc: "2.0", id: body.id, error: { code: -32601, message: "method not found" } }
          : { jsonrpc: "2.0", id: body.id, result }
      )
    }
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    calls,
    issuedNonces,
    setMode: (next: RpcMode) => {
      mode = next
    },
    stop: () => server.stop(true)
  }
}

const rpc = startRpc()
const payer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 42))
const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const deployment = { network: "stellar:testnet", assetContract: TESTNET_USDC }
const resource = { url: "http://127.0.0.1:9/paid", description: "a paid resource", mimeType: "application/json" }

beforeEach(() => {
  rpc.setMode("normal")
  rpc.calls.length = 0
  rpc.issuedNonces.length = 0
})

const build = (requirements: PaymentRequirements, rpcUrl = rpc.url) =>
  Effect.runPromise(Effect.either(buildExactPayment({ requirements, resource, signer: payer, rpcUrl, deployment })))

const built = async (requirements: PaymentRequirements) => {
  const result = await build(requirements)
  if (Either.isLeft(result)) throw new Error(`expected a payment, got ${result.left._tag}: ${JSON.stringify(result.left)}`)
  return result.right
}

const transactionOf = (xdrBase64: string) => new Transaction(xdrBase64, Networks.TESTNET)
const authOf = (transaction: Transaction) => {
  const op = transaction.operations[0]
  if (op?.type !== "invokeHostFunction") throw new Error("not an InvokeHostFunction")
  return op.auth ?? []
}

describe("buildExactPayment: a Stellar exact payment built and signed through Soroban RPC", () => {
  test("transfers the asked asset and amount to the payee, signed by the payer, in the spec's payload shape", async () => {
    const requirements = exactRequirements({ payTo: PAY_TO, amount: "12345", maxTimeoutSeconds: 60 })
    const { paymentPayload, authorization } = await built(requirements)

    expect(paymentPayload).toEqual({ x402Version: 2, resource, accepted: requirements, payload: { transaction: expect.any(String) } })
    const xdrBase64 = paymentPayload.payload.transaction as string
    const decoded = decodePayment(xdrBase64, "stellar:testnet")
    expect(Either.getOrThrow(decoded).transfer).toEqual({ asset: TESTNET_USDC, from: payer.publicKey(), to: PAY_TO, amount: 12345n })

    const transaction = transactionOf(xdrBase64)
    expect(transaction.source).toBe(contract.NULL_ACCOUNT)
    const [entry, ...more] = authOf(transaction)
    expect(more).toHaveLength(0)
    expect(authEntryVerifies(entry!, Networks.TESTNET)).toBe(true)
    // The same entry does not verify for another network: the check is not vacuous.
    expect(authEntryVerifies(entry!, Networks.PUBLIC)).toBe(false)
    // Expires ceil(60 s / 5 s) = 12 ledgers after the latest, with the nonce the RPC issued.
    const credentials = entry!.credentials().address()
    expect(credentials.signatureExpirationLedger()).toBe(LATEST_LEDGER + 12)
    expect(BigInt(credentials.nonce().toString())).toBe(rpc.issuedNonces[0]!)
    expect(authorization).toEqual({ payer: payer.publicKey(), nonce: rpc.issuedNonces[0]!.toString(), expirationLedger: LATEST_LEDGER + 12 })
  })

  test("carries the footprint and resources of the simulation with the signature in place, and a fee covering them", async () => {
    const { paymentPayload } = await built(exactRequirements({ payTo: PAY_TO }))
    const transaction = transactionOf(paymentPayload.payload.transaction as string)
    const data = transaction.toEnvelope().v1().tx().ext().sorobanData()
    expect(data.resources().instructions()).toBe(ENFORCING_INSTRUCTIONS)
    expect(data.resources().footprint().readOnly().map((k) => k.toXDR("base64"))).toHaveLength(1)
    expect(Number(data.resourceFee().toBigInt())).toBe(MIN_RESOURCE_FEE)
    expect(Number(transaction.fee)).toBeGreaterThanOrEqual(MIN_RESOURCE_FEE)
    // A wallet's sequence: the latest ledger, a recording simulation, then one with the signed entry.
    expect(rpc.calls.map((c) => c.method)).toEqual(["getLatestLedger", "simulateTransaction", "simulateTransaction"])
    const second = transactionOf(rpc.calls[2]!.params.transaction as string)
    expect(authOf(second).map((e) => authEntryVerifies(e, Networks.TESTNET))).toEqual([true])
  })

  test("requirements of another scheme, network or asset, or without sponsored fees, are refused before the RPC is asked", async () => {
    const refusals = [
      exactRequirements({ payTo: PAY_TO, scheme: "upto" }),
      exactRequirements({ payTo: PAY_TO, network: "stellar:pubnet" }),
      exactRequirements({ payTo: PAY_TO, asset: OTHER_ASSET }),
      exactRequirements({ payTo: PAY_TO, extra: {} }),
      exactRequirements({ payTo: PAY_TO, amount: "0" })
    ]
    for (const requirements of refusals) {
      const result = await build(requirements)
      expect(Either.isLeft(result) && result.left._tag).toBe("UnpayableRequirements")
    }
    expect(rpc.calls).toHaveLength(0)
  })

  test("an RPC asking the payer to authorise more than the transfer gets no signature", async () => {
    rpc.setMode("asks-for-more")
    const result = await build(exactRequirements({ payTo: PAY_TO }))
    expect(Either.isLeft(result) && result.left).toMatchObject({
      _tag: "SimulationRejected",
      reason: "the simulation's authorisation covers something other than the transfer built"
    })
    // Nothing signed left this process: no second simulation.
    expect(rpc.calls.map((c) => c.method)).toEqual(["getLatestLedger", "simulateTransaction"])
  })

  test("a failing simulation and an unreachable RPC are typed failures naming the cause", async () => {
    rpc.setMode("simulation-fails")
    const failed = await build(exactRequirements({ payTo: PAY_TO }))
    expect(Either.isLeft(failed) && failed.left._tag).toBe("SimulationRejected")
    expect(Either.isLeft(failed) && failed.left.reason).toContain("balance is not sufficient")

    rpc.setMode("down")
    const down = await build(exactRequirements({ payTo: PAY_TO }))
    expect(Either.isLeft(down) && down.left._tag).toBe("SorobanRpcFailure")
    const nobody = await build(exactRequirements({ payTo: PAY_TO }), "http://127.0.0.1:1")
    expect(Either.isLeft(nobody) && nobody.left._tag).toBe("SorobanRpcFailure")
  })
})

// ---------------------------------------------------------------------------------------------

const probesTrusting = (...origins: Array<string>) => Schema.decodeSync(ProbesConfig)({ trustedOrigins: origins, timeoutMs: 5000 })

const pay = (input: Partial<PayForInput> & Pick<PayForInput, "url" | "probes">) =>
  Effect.runPromise(
    Effect.either(
      payFor({ method: "GET", signer: payer, rpcUrl: rpc.url, deployment, maxPrice: 1_000_000n, ...input }).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
    )
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
  test("pays once: the facilitator settles exactly one payment, and the answer carries its PAYMENT-RESPONSE", async () => {
    const result = await pay({ url: seller.url, probes: probesTrusting(sellerOrigin) })
    const paid = Either.getOrThrow(result)
    expect([facilitator.calls("/verify"), facilitator.calls("/settle")]).toEqual([1, 1])

    const settle = facilitator.requests.find((r) => r.path === "/settle")!.body as {
      paymentPayload: { payload: { transaction: string } }
    }
    const transactionHash = createHash("sha256").update(JSON.stringify(settle)).digest("hex")
    expect(paid).toMatchObject({
      url: seller.url,
      status: 200,
      paymentResponse: { success: true, transaction: transactionHash, network: "stellar:testnet", payer: payer.publicKey() },
      requirements: { scheme: "exact", network: "stellar:testnet", asset: TESTNET_USDC, payTo: PAY_TO, amount: "10000" },
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

  test("a price above maxPrice is refused before anything is signed or sent", async () => {
    const result = await pay({ url: seller.url, probes: probesTrusting(sellerOrigin), maxPrice: 9_999n })
    expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "PriceAboveLimit", cheapest: "10000", maxPrice: "9999" })
    expect(facilitator.requests).toHaveLength(0)
    expect(rpc.calls).toHaveLength(0)
  })

  test("the probes' outbound guard applies: an untrusted loopback target is refused before any request", async () => {
    const result = await pay({ url: seller.url, probes: probesTrusting() })
    expect(Either.isLeft(result) && result.left._tag).toBe("TargetRefused")
    expect(facilitator.requests).toHaveLength(0)
    expect(rpc.calls).toHaveLength(0)
  })

  test("a facilitator refusing the payment: the seller answers 402 again, nothing settles, no payment response", async () => {
    facilitator.setMode("invalid")
    const paid = Either.getOrThrow(await pay({ url: seller.url, probes: probesTrusting(sellerOrigin) }))
    expect(paid.status).toBe(402)
    expect(paid.paymentResponse).toBeNull()
    expect(facilitator.calls("/settle")).toBe(0)
  })
})

describe("payFor refuses to pay what it should not", () => {
  const probes = () => probesTrusting(x402Fixture.origin)

  test("no option on this deployment's network or asset, or a v1 challenge: nothing is signed", async () => {
    for (const path of ["/pubnet", "/other-asset"]) {
      const result = await pay({ url: x402Fixture.url(path), probes: probes() })
      expect(Either.isLeft(result) && result.left._tag).toBe("NoAcceptableOption")
    }
    const v1 = await pay({ url: x402Fixture.url("/v1"), probes: probes() })
    expect(Either.isLeft(v1) && v1.left).toMatchObject({ _tag: "NoAcceptableOption", offered: expect.stringContaining("v1") })
    expect(rpc.calls).toHaveLength(0)
  })

  test("the caller's accept predicate is honoured: a refused option is not paid", async () => {
    const result = await pay({ url: x402Fixture.url("/paid"), probes: probes(), accept: (r) => r.payTo !== PAY_TO })
    expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "NoAcceptableOption", offered: expect.stringContaining("not accepted by the caller") })
    expect(rpc.calls).toHaveLength(0)
  })

  test("a free answer, a bare 402 and an undecodable challenge are told apart", async () => {
    expect(await pay({ url: x402Fixture.url("/free"), probes: probes() })).toEqual(
      Either.left(expect.objectContaining({ _tag: "NoPaymentRequired", httpStatus: 200 }))
    )
    const bare = await pay({ url: x402Fixture.url("/bare-402"), probes: probes() })
    expect(Either.isLeft(bare) && bare.left._tag).toBe("ChallengeUnreadable")
    const garbage = await pay({ url: x402Fixture.url("/garbage"), probes: probes() })
    expect(Either.isLeft(garbage) && garbage.left._tag).toBe("ChallengeUnreadable")
  })
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
        return new Response("{}", { status: 402, headers: { "PAYMENT-REQUIRED": encodePaymentRequiredHeader(challenge as never) } })
      }
      payments.push(decodePaymentSignatureHeader(signature))
      if (paidAnswer === "hang") return new Promise<Response>(() => {})
      const headers = {
        "PAYMENT-RESPONSE": encodePaymentResponseHeader({ success: true, transaction: "f".repeat(64), network: "stellar:testnet", payer: payer.publicKey() }),
        "content-type": paidAnswer === "html" ? "text/html" : "application/json"
      }
      const body = paidAnswer === "huge-json" ? JSON.stringify({ pad: "x".repeat(200_000) }) : paidAnswer === "fake-json" ? "<html>" : '{"ok":true}'
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

  test("the cheapest payable option is paid, and only once", async () => {
    const paid = Either.getOrThrow(await pay({ url: sellerOf.url, probes: probes() }))
    expect(paid.requirements.payTo).toBe(PAY_TO)
    expect(paid.amount).toBe("10000")
    expect(sellerOf.payments).toHaveLength(1)
    expect(sellerOf.payments[0]).toMatchObject({ x402Version: 2, accepted: { payTo: PAY_TO, amount: "10000" }, resource: { url: sellerOf.url } })
  })

  test("the caller's choice and maxPrice narrow the options: the other payee is paid when it is the only one accepted", async () => {
    const paid = Either.getOrThrow(await pay({ url: sellerOf.url, probes: probes(), accept: (r) => r.payTo === OTHER_PAYEE }))
    expect(paid.amount).toBe("20000")
    const capped = await pay({ url: sellerOf.url, probes: probes(), accept: (r) => r.payTo === OTHER_PAYEE, maxPrice: 19_999n })
    expect(Either.isLeft(capped) && capped.left._tag).toBe("PriceAboveLimit")
    expect(sellerOf.payments).toHaveLength(1)
  })

  test("whether the paid body is the JSON it declares", async () => {
    const bodyIsJson = async () => Either.getOrThrow(await pay({ url: sellerOf.url, probes: probes() })).bodyIsJson
    expect(await bodyIsJson()).toBe(true)
    sellerOf.answerPaidWith("html")
    expect(await bodyIsJson()).toBe(false)
    sellerOf.answerPaidWith("fake-json")
    expect(await bodyIsJson()).toBe(false)
    sellerOf.answerPaidWith("huge-json")
    expect(await bodyIsJson()).toBeNull()
  })

  test("a paid request left unanswered is an unknown outcome carrying the payment's ledger identity", async () => {
    sellerOf.answerPaidWith("hang")
    const result = await pay({ url: sellerOf.url, probes: probes(), paidTimeoutMs: 300 })
    expect(Either.isLeft(result) && result.left).toMatchObject({
      _tag: "PaymentOutcomeUnknown",
      authorization: { payer: payer.publicKey(), nonce: rpc.issuedNonces[0]!.toString(), expirationLedger: LATEST_LEDGER + 12 }
    })
    expect(sellerOf.payments).toHaveLength(1)
  })
})

afterAll(async () => {
  await rpc.stop()
  await seller.stop()
  await facilitator.stop()
  await x402Fixture.stop()
})
