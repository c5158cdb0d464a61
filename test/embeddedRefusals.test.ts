import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { authorizeInvocation, type Keypair, xdr } from "@stellar/stellar-sdk"
import type { PaymentRequirements } from "@x402/core/types"
import { Duration, Effect } from "effect"
import { TESTNET_USDC } from "../src/config.js"
import { transferCall, transferTransaction } from "../src/payments/transferCall.js"
import { type FixtureLedger, startFixtureLedger } from "./fixtures/ledger.js"
import { RWAB_SAC } from "./fixtures/sorobanRpc.js"
import {
  type BuildOptions,
  buildExactPayment,
  exactRequirements,
  settleBody,
  testBuyer
} from "./fixtures/stellarPayment.js"
import { configFor, embeddedEntry, feeKeyFile, withEmbedded } from "./support/embeddedFacilitator.js"

// Each refusal of the embedded facilitator: the reference facilitator's reason code, on verify and
// on settle alike, and nothing sent to the network.

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
let ledger: FixtureLedger
const fee = feeKeyFile(23)
beforeAll(() => {
  ledger = startFixtureLedger({ network: { closeEveryMs: 200 } })
})
afterAll(() => ledger.stop())

const requirements = () => exactRequirements({ payTo: PAY_TO })
const valid = () => ledger.latestLedger() + 5
const pay = (build: BuildOptions = {}, reqs: PaymentRequirements = requirements()) =>
  buildExactPayment(reqs, { validUntilLedger: valid(), ...build })

/** A payment whose transaction carries a second, signed authorisation by `other` of the same transfer. */
const withExtraAuth = async (other: Keypair) => {
  const reqs = requirements()
  const terms = { asset: TESTNET_USDC, from: testBuyer.publicKey(), to: PAY_TO, amount: BigInt(reqs.amount) }
  const { invocation } = transferCall(terms)
  const sign = (signer: Keypair) =>
    authorizeInvocation({
      signer,
      validUntilLedgerSeq: valid(),
      invocation,
      networkPassphrase: "Test SDF Network ; September 2015",
      authV2: true
    })
  const tx = transferTransaction({
    network: reqs.network,
    terms,
    auth: [await sign(testBuyer), await sign(other)],
    timeoutSeconds: 60,
    inclusionFeeStroops: 100
  })
  return { ...(await pay()), payload: { transaction: tx.toXdr() } }
}

/** The payment's transaction with its one operation twice. */
const withExtraOperation = async () => {
  const payment = await pay()
  const envelope = xdr.TransactionEnvelope.fromXdr(payment.payload.transaction, "base64")
  if (envelope.type !== "envelopeTypeTx") throw new Error("not a v1 envelope")
  envelope.v1.tx.operations.push(envelope.v1.tx.operations[0]!)
  return { ...payment, payload: { transaction: envelope.toXdr("base64") } }
}

const judged = async (body: unknown, overrides: Parameters<typeof configFor>[2] = {}) => {
  const before = ledger.rpcCalls.filter((m) => m === "sendTransaction").length
  const config = configFor(ledger, [embeddedEntry(fee.path, { channels: 2 })], overrides)
  const { verify, settle } = await withEmbedded(config, (backend) =>
    Effect.all({
      verify: backend.verify(body, Duration.seconds(5)),
      settle: backend.settle(body, Duration.seconds(10))
    })
  )
  const sent = ledger.rpcCalls.filter((m) => m === "sendTransaction").length - before
  return { verify, settle, sent }
}

const cases: ReadonlyArray<readonly [string, () => Promise<unknown>, string]> = [
  [
    "wrong amount",
    async () => settleBody(await pay({ transfer: { amount: "9999" } }), requirements()),
    "invalid_exact_stellar_payload_wrong_amount"
  ],
  [
    "wrong payee",
    async () => settleBody(await pay({ transfer: { to: testBuyer.publicKey() } }), requirements()),
    "invalid_exact_stellar_payload_wrong_recipient"
  ],
  [
    "wrong asset",
    async () => settleBody(await pay({ transfer: { asset: RWAB_SAC } }), requirements()),
    "invalid_exact_stellar_payload_wrong_asset"
  ],
  [
    "payment made for another network",
    async () => {
      const payment = await pay()
      return settleBody({ ...payment, accepted: { ...payment.accepted, network: "stellar:pubnet" } }, requirements())
    },
    "network_mismatch"
  ],
  [
    "requirements on a network this backend does not settle",
    async () => {
      const reqs = exactRequirements({ payTo: PAY_TO, network: "stellar:pubnet" })
      return settleBody(await pay({}, reqs), reqs)
    },
    "invalid_network"
  ],
  [
    "an expired authorisation",
    async () => settleBody(await pay({ validUntilLedger: ledger.latestLedger() - 1 }), requirements()),
    "invalid_exact_stellar_payload_simulation_failed"
  ],
  [
    "an expiration past the window",
    async () => settleBody(await pay({ validUntilLedger: ledger.latestLedger() + 500 }), requirements()),
    "invalid_exact_stellar_signature_expiration_too_far"
  ],
  [
    "a bad payer signature",
    async () => settleBody(await pay({ bogusSignature: true }), requirements()),
    "invalid_exact_stellar_payload_simulation_failed"
  ],
  [
    "an extra operation",
    async () => settleBody(await withExtraOperation(), requirements()),
    "invalid_exact_stellar_payload_wrong_operation"
  ],
  [
    "the fee account as payer",
    async () => settleBody(await pay({ buyer: fee.keypair }), requirements()),
    "invalid_exact_stellar_payload_facilitator_is_payer"
  ],
  [
    "a channel account as payer",
    async () => settleBody(await pay({ buyer: fee.channel(1) }), requirements()),
    "invalid_exact_stellar_payload_facilitator_is_payer"
  ],
  [
    "the fee account in the auth",
    async () => settleBody(await withExtraAuth(fee.keypair), requirements()),
    "invalid_exact_stellar_payload_facilitator_in_auth"
  ],
  [
    "a channel account in the auth",
    async () => settleBody(await withExtraAuth(fee.channel(0)), requirements()),
    "invalid_exact_stellar_payload_facilitator_in_auth"
  ],
  [
    "a second authorisation entry of the payer (another nonce, another amount)",
    async () => settleBody(await pay({ decoyEntry: true }), requirements()),
    "invalid_exact_stellar_payload_malformed"
  ],
  [
    "delegated credentials",
    async () => settleBody(await pay({ form: "addressWithDelegates" }), requirements()),
    "invalid_exact_stellar_payload_unsupported_credential_type"
  ],
  [
    "source-account credentials",
    async () => settleBody(await pay({ form: "sourceAccount" }), requirements()),
    "invalid_exact_stellar_payload_unsupported_credential_type"
  ]
]

describe("embedded facilitator refusals", () => {
  for (const [name, body, reason] of cases) {
    test(`${name}: ${reason}, nothing sent`, async () => {
      const { verify, settle, sent } = await judged(await body())
      expect(verify).toMatchObject({ isValid: false, invalidReason: reason })
      expect(settle).toMatchObject({ success: false, errorReason: reason, transaction: "" })
      expect(sent).toBe(0)
    })
  }

  test("a payer whose balance cannot cover the transfer: simulation_failed, nothing sent", async () => {
    const poor = (await import("./fixtures/stellarPayment.js")).seededBuyer(41)
    ledger.network.setTokenBalance(TESTNET_USDC, poor.publicKey(), 1n)
    const { verify, settle, sent } = await judged(settleBody(await pay({ buyer: poor }), requirements()))
    expect(verify).toMatchObject({ isValid: false, invalidReason: "invalid_exact_stellar_payload_simulation_failed" })
    expect(settle).toMatchObject({ success: false, errorReason: "invalid_exact_stellar_payload_simulation_failed" })
    expect(sent).toBe(0)
  })

  test("a fee above budgets.feeCeilingStroops: verify passes, settle refuses fee_exceeds_maximum, nothing sent", async () => {
    const base = configFor(ledger, [])
    const { verify, settle, sent } = await judged(settleBody(await pay(), requirements()), {
      budgets: { ...base.budgets, feeCeilingStroops: 50_000 }
    })
    expect(verify).toMatchObject({ isValid: true, payer: testBuyer.publicKey() })
    expect(settle).toMatchObject({ success: false, errorReason: "invalid_exact_stellar_payload_fee_exceeds_maximum" })
    expect(sent).toBe(0)
  })

  test("a valid payment verifies with the payer named", async () => {
    const { verify, sent } = await judged(settleBody(await pay({ form: "address" }), requirements()))
    expect(verify).toEqual({ isValid: true, payer: testBuyer.publicKey() })
    expect(sent).toBe(1)
  })
})
