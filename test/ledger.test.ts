import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test"
import {
  authorizeEntry,
  Contract,
  Keypair,
  Networks,
  nativeToScVal,
  Operation,
  rpc,
  TransactionBuilder
} from "@stellar/stellar-sdk"
import { Effect, Either, Option } from "effect"
import { TESTNET_USDC } from "../src/config.js"
import { addressAuthorization } from "../src/ledger/authEntries.js"
import {
  LedgerReader,
  type LedgerReaderShape,
  type LedgerTransfer,
  LedgerUnavailable
} from "../src/ledger/LedgerReader.js"
import type { LedgerReaderOptions } from "../src/ledger/read.js"
import { type FixtureLedger, settlePayment, startFixtureLedger } from "./fixtures/ledger.js"
import { buildExactPayment, exactRequirements, seededBuyer } from "./fixtures/stellarPayment.js"
import { it } from "./support/effectTest.js"

/** LedgerReader.Live's reads over real HTTP against the fixture Soroban RPC and Horizon. */

const payer = seededBuyer(21).publicKey()
const payee = seededBuyer(22).publicKey()
const stranger = seededBuyer(23).publicKey()
const OTHER_TOKEN = "CDLZFC3SYJYDZT7K67VZ75HPJVIEUVNIXF47ZG2FB2RMQQVU2HHGCYSC"
const usdc = (from: string, to: string, amount: bigint): LedgerTransfer => ({
  contract: TESTNET_USDC,
  from,
  to,
  amount
})

let fixture: FixtureLedger

/** `read` on LedgerReader.Live over the ledger `f` (the shared fixture unless named). */
const onLedger = <A>(
  read: (reader: LedgerReaderShape) => Effect.Effect<A, LedgerUnavailable>,
  options: Partial<LedgerReaderOptions> = {},
  f: FixtureLedger = fixture
) =>
  Effect.flatMap(LedgerReader, read).pipe(
    Effect.provide(
      LedgerReader.layer({
        sorobanRpcUrl: f.rpcUrl,
        horizonUrl: f.horizonUrl,
        network: "stellar:testnet",
        timeoutMs: 2000,
        ...options
      })
    )
  )
/** The read's failure; the test fails when it succeeded. */
const failure = (
  read: (reader: LedgerReaderShape) => Effect.Effect<unknown, LedgerUnavailable>,
  options: Partial<LedgerReaderOptions> = {}
) => Effect.flip(onLedger(read, options)).pipe(Effect.tap((error) => expect(error).toBeInstanceOf(LedgerUnavailable)))
/** Another fixture ledger, stopped when the test ends. */
const ownLedger = (...args: Parameters<typeof startFixtureLedger>) =>
  Effect.acquireRelease(
    Effect.sync(() => startFixtureLedger(...args)),
    (ledger) => Effect.sync(() => ledger.stop())
  )
const resetCalls = () => {
  fixture.rpcCalls.length = 0
  fixture.horizonRequests.length = 0
}

beforeAll(() => {
  fixture = startFixtureLedger({ latestLedger: 500_000 })
})
afterAll(() => fixture.stop())
afterEach(() => {
  fixture.setFailing("both", false)
  fixture.setHanging("both", false)
})

describe("transaction", () => {
  it.live(
    "a successful transaction in RPC's window: status, ledger, close time and the transfer its envelope invokes",
    () =>
      Effect.gen(function* () {
        const hash = fixture.addTransaction({ transfer: usdc(payer, payee, 10_000n), ledger: 499_990 })
        resetCalls()
        const tx = Option.getOrThrow(yield* onLedger((r) => r.transaction(hash)))
        expect(tx).toEqual({
          hash,
          successful: true,
          ledger: 499_990,
          closedAt: fixture.closeTime(499_990).toISOString(),
          transfers: [usdc(payer, payee, 10_000n)],
          authorizations: []
        })
        expect(fixture.rpcCalls).toEqual(["getTransaction"])
        expect(fixture.horizonRequests).toEqual([])
      })
  )

  it.live("an upper-case hash names the same transaction", () =>
    Effect.gen(function* () {
      const hash = fixture.addTransaction({ transfer: usdc(payer, payee, 5n) })
      expect(Option.getOrThrow(yield* onLedger((r) => r.transaction(hash.toUpperCase()))).hash).toBe(hash)
    })
  )

  it.live(
    "a failed transaction is found, not successful, and transferred nothing: transfers come from its result's events, not its envelope",
    () =>
      Effect.gen(function* () {
        const hash = fixture.addTransaction({ transfer: usdc(payer, payee, 10_000n), successful: false })
        const tx = Option.getOrThrow(yield* onLedger((r) => r.transaction(hash)))
        expect(tx.successful).toBe(false)
        expect(tx.transfers).toEqual([])
      })
  )

  it.live("a successful call that emitted no transfer event moved nothing, whatever its envelope asked", () =>
    Effect.gen(function* () {
      const hash = fixture.addTransaction({ transfer: usdc(payer, payee, 10_000n), emitEvent: false })
      expect(Option.getOrThrow(yield* onLedger((r) => r.transaction(hash)))).toMatchObject({
        successful: true,
        transfers: []
      })
    })
  )

  it.live(
    "an answer carrying another transaction's envelope confirms nothing: it is LedgerUnavailable, from RPC and from Horizon",
    () =>
      Effect.gen(function* () {
        const asked = fixture.addTransaction({ transfer: usdc(payer, payee, 10_000n) })
        const other = fixture.addTransaction({ transfer: usdc(payer, payee, 10_000n) })
        fixture.forgeEnvelope(asked, other)
        const fromRpc = yield* Effect.either(onLedger((r) => r.transaction(asked)))
        expect(Either.isLeft(fromRpc) && fromRpc.left.message).toContain(`envelope of another transaction (${other})`)
        const old = fixture.oldestRpcLedger() - 10
        const askedOld = fixture.addTransaction({ transfer: usdc(payer, payee, 10_000n), ledger: old })
        fixture.forgeEnvelope(askedOld, other)
        const fromHorizon = yield* Effect.either(onLedger((r) => r.transaction(askedOld)))
        expect(Either.isLeft(fromHorizon) && fromHorizon.left.message).toContain("Horizon")
        // The honest answer about the other transaction is still read.
        expect(Option.getOrThrow(yield* onLedger((r) => r.transaction(other))).hash).toBe(other)
      })
  )

  it.live("a transaction without a token transfer has no transfers", () =>
    Effect.gen(function* () {
      const hash = fixture.addTransaction({ transfer: null })
      expect(Option.getOrThrow(yield* onLedger((r) => r.transaction(hash)))).toMatchObject({
        successful: true,
        transfers: []
      })
    })
  )

  it.live("a transaction paying someone else shows the real payee", () =>
    Effect.gen(function* () {
      const hash = fixture.addTransaction({ transfer: usdc(payer, payee, 10_000n) })
      fixture.rewriteTransfer(hash, { to: stranger })
      expect(Option.getOrThrow(yield* onLedger((r) => r.transaction(hash))).transfers).toEqual([
        usdc(payer, stranger, 10_000n)
      ])
    })
  )

  it.live("a hash neither knows is none, after asking RPC and then Horizon", () =>
    Effect.gen(function* () {
      const hash = "ab".repeat(32)
      resetCalls()
      expect(Option.isNone(yield* onLedger((r) => r.transaction(hash)))).toBe(true)
      expect(fixture.rpcCalls).toEqual(["getTransaction"])
      expect(fixture.horizonRequests).toEqual([`/transactions/${hash}`])
    })
  )

  it.live("a string that is not a hash is none without a request", () =>
    Effect.gen(function* () {
      resetCalls()
      expect(Option.isNone(yield* onLedger((r) => r.transaction("not-a-hash")))).toBe(true)
      expect(fixture.rpcCalls).toEqual([])
      expect(fixture.horizonRequests).toEqual([])
    })
  )

  it.live("a transaction older than RPC's retention window comes from Horizon", () =>
    Effect.gen(function* () {
      const old = fixture.oldestRpcLedger() - 10
      const hash = fixture.addTransaction({ transfer: usdc(payer, payee, 70_000n), ledger: old })
      const failed = fixture.addTransaction({ transfer: usdc(payer, payee, 1n), ledger: old, successful: false })
      resetCalls()
      expect(Option.getOrThrow(yield* onLedger((r) => r.transaction(hash)))).toEqual({
        hash,
        successful: true,
        ledger: old,
        closedAt: fixture.closeTime(old).toISOString(),
        transfers: [usdc(payer, payee, 70_000n)],
        authorizations: []
      })
      expect(fixture.rpcCalls).toEqual(["getTransaction"])
      expect(fixture.horizonRequests).toEqual([`/transactions/${hash}`])
      expect(Option.getOrThrow(yield* onLedger((r) => r.transaction(failed))).successful).toBe(false)
    })
  )

  it.live("a transaction that appears after a delay is none until then", () =>
    Effect.gen(function* () {
      const hash = fixture.addTransaction({ transfer: usdc(payer, payee, 10_000n), visibleAfterMs: 700 })
      expect(Option.isNone(yield* onLedger((r) => r.transaction(hash)))).toBe(true)
      yield* Effect.sleep(800)
      const tx = Option.getOrThrow(yield* onLedger((r) => r.transaction(hash)))
      expect(tx.successful).toBe(true)
      // Its close time is when it appeared, not when it was announced.
      expect(Date.parse(tx.closedAt)).toBeGreaterThan(Date.now() - 2000)
    })
  )

  it.live("RPC answering 503 is LedgerUnavailable, not a miss: Horizon is not asked", () =>
    Effect.gen(function* () {
      const hash = fixture.addTransaction({ transfer: usdc(payer, payee, 10_000n) })
      fixture.setFailing("rpc")
      resetCalls()
      const error = yield* failure((r) => r.transaction(hash))
      expect(error.message).toContain("HTTP 503")
      expect(error.message).toContain(fixture.rpcUrl)
      expect(fixture.horizonRequests).toEqual([])
    })
  )

  it.live("Horizon failing after RPC's miss is LedgerUnavailable, not none", () =>
    Effect.gen(function* () {
      fixture.setFailing("horizon")
      const error = yield* failure((r) => r.transaction("cd".repeat(32)))
      expect(error.message).toContain("Horizon")
      expect(error.message).toContain("HTTP 503")
    })
  )
})

describe("nonceConsumed", () => {
  it.live(
    "true while the nonce entry lives, false for another nonce or address, false once its expiration ledger has passed",
    () =>
      Effect.gen(function* () {
        const expiration = fixture.latestLedger() + 20
        fixture.consumeNonce(payer, -42n, expiration)
        expect(yield* onLedger((r) => r.nonceConsumed(payer, -42n))).toBe(true)
        expect(yield* onLedger((r) => r.nonceConsumed(payer, 42n))).toBe(false)
        expect(yield* onLedger((r) => r.nonceConsumed(stranger, -42n))).toBe(false)
        fixture.setLatestLedger(expiration)
        expect(yield* onLedger((r) => r.nonceConsumed(payer, -42n))).toBe(true)
        fixture.advanceLedgers(1)
        expect(yield* onLedger((r) => r.nonceConsumed(payer, -42n))).toBe(false)
      })
  )

  it.live("RPC down is LedgerUnavailable", () =>
    Effect.gen(function* () {
      fixture.setFailing("rpc")
      expect((yield* failure((r) => r.nonceConsumed(payer, 1n))).message).toContain("getLedgerEntries")
    })
  )
})

describe("transferEvents", () => {
  const contractEvents = (f: FixtureLedger, from: number) => {
    // Matching: SAC (4 topics), plain SEP-41 (3 topics), CAP-67 map data; and near misses around them.
    f.emitTransfer({ ...usdc(payer, payee, 1n), ledger: from - 1 })
    f.emitTransfer({ ...usdc(payer, payee, 2n), ledger: from })
    f.emitTransfer({ ...usdc(payer, stranger, 99n), ledger: from })
    f.emitTransfer({ ...usdc(stranger, payee, 98n), ledger: from + 1 })
    f.emitTransfer({ ...usdc(payer, payee, 3n), ledger: from + 1, assetName: null })
    f.emitTransfer({ contract: OTHER_TOKEN, from: payer, to: payee, amount: 97n, ledger: from + 2 })
    f.emitTransfer({ ...usdc(payer, payee, 4n), ledger: from + 3, amountAsMap: true })
    f.emitTransfer({ ...usdc(payer, payee, 96n), ledger: from + 3, inSuccessfulContractCall: false })
    f.emitTransfer({ ...usdc(payer, payee, 5n), ledger: from + 4 })
    f.emitTransfer({ ...usdc(payer, payee, 6n), ledger: from + 5 })
  }
  const query = (from: number, to: number) => ({
    contract: TESTNET_USDC,
    from: payer,
    to: payee,
    startLedger: from,
    endLedger: to
  })

  it.live("only the contract's transfers from `from` to `to` in [startLedger, endLedger], across pages", () =>
    Effect.gen(function* () {
      const start = fixture.latestLedger() - 100
      contractEvents(fixture, start)
      resetCalls()
      const found = yield* onLedger((r) => r.transferEvents(query(start, start + 4)), { eventPageSize: 2 })
      expect(found.map((e) => [e.amount, e.ledger])).toEqual([
        [2n, start],
        [3n, start + 1],
        [4n, start + 3],
        [5n, start + 4]
      ])
      expect(found[0]).toMatchObject({ ...usdc(payer, payee, 2n), closedAt: fixture.closeTime(start).toISOString() })
      expect(found[0]!.transactionHash).toMatch(/^[0-9a-f]{64}$/)
      expect(fixture.rpcCalls.filter((c) => c === "getEvents").length).toBeGreaterThan(1)
      // One page large enough gives the same answer.
      expect(yield* onLedger((r) => r.transferEvents(query(start, start + 4)))).toEqual(found)
    })
  )

  it.live("a range longer than RPC scans per request is read to its end", () =>
    Effect.gen(function* () {
      const wide = yield* ownLedger({ latestLedger: 10_000, eventScanLimit: 10 })
      for (let ledger = 9_900; ledger <= 9_990; ledger += 15)
        wide.emitTransfer({ ...usdc(payer, payee, BigInt(ledger)), ledger })
      const found = yield* onLedger((r) => r.transferEvents(query(9_900, 9_990)), {}, wide)
      expect(found.map((e) => e.ledger)).toEqual([9_900, 9_915, 9_930, 9_945, 9_960, 9_975, 9_990])
      expect(wide.rpcCalls.filter((c) => c === "getEvents").length).toBeGreaterThanOrEqual(9)
    })
  )

  it.live("an empty range is empty; a start before RPC's retention is LedgerUnavailable, never an empty answer", () =>
    Effect.gen(function* () {
      expect(
        yield* onLedger((r) => r.transferEvents(query(fixture.latestLedger() - 5, fixture.latestLedger() - 6)))
      ).toEqual([])
      const error = yield* failure((r) =>
        r.transferEvents(query(fixture.oldestRpcLedger() - 1, fixture.latestLedger()))
      )
      expect(error.message).toContain("startLedger must be within the ledger range")
    })
  )

  it.live("RPC down is LedgerUnavailable", () =>
    Effect.gen(function* () {
      fixture.setFailing("rpc")
      yield* failure((r) => r.transferEvents(query(fixture.latestLedger() - 5, fixture.latestLedger())))
    })
  )
})

describe("latestLedger", () => {
  it.live("follows the ledger", () =>
    Effect.gen(function* () {
      fixture.setLatestLedger(fixture.latestLedger() + 7)
      expect(yield* onLedger((r) => r.latestLedger())).toBe(fixture.latestLedger())
    })
  )
})

describe("a settled x402 payment on the fixture ledger", () => {
  it.live("its transaction, spent nonce and transfer event are all readable", () =>
    Effect.gen(function* () {
      const requirements = exactRequirements({ payTo: payee })
      const buyer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 31))
      const payment = yield* Effect.promise(() =>
        buildExactPayment(requirements, { buyer, validUntilLedger: fixture.latestLedger() + 50 })
      )
      const settled = settlePayment(fixture, payment)
      const expected = usdc(buyer.publicKey(), payee, 10_000n)
      expect(settled.transfer).toEqual(expected)
      expect(settled.nonces).toHaveLength(1)
      const { nonce, expirationLedger } = settled.nonces[0]!
      expect(expirationLedger).toBe(fixture.latestLedger() + 50)

      const tx = Option.getOrThrow(yield* onLedger((r) => r.transaction(settled.hash)))
      expect(tx).toMatchObject({ successful: true, transfers: [expected] })
      expect(yield* onLedger((r) => r.nonceConsumed(buyer.publicKey(), nonce))).toBe(true)
      const events = yield* onLedger((r) =>
        r.transferEvents({
          contract: TESTNET_USDC,
          from: buyer.publicKey(),
          to: payee,
          startLedger: fixture.latestLedger() - 1,
          endLedger: fixture.latestLedger()
        })
      )
      expect(events).toEqual([{ ...expected, ledger: tx.ledger, transactionHash: settled.hash, closedAt: tx.closedAt }])

      fixture.setLatestLedger(expirationLedger + 1)
      expect(yield* onLedger((r) => r.nonceConsumed(buyer.publicKey(), nonce))).toBe(false)
    })
  )

  for (const form of ["address", "addressV2"] as const)
    it.live(
      `its ${form} authorisation is read from the envelope, and the same authorisation cannot execute twice`,
      () =>
        Effect.gen(function* () {
          const buyer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, form === "address" ? 33 : 34))
          const payment = yield* Effect.promise(() =>
            buildExactPayment(exactRequirements({ payTo: payee }), {
              buyer,
              form,
              validUntilLedger: fixture.latestLedger() + 50
            })
          )
          const settled = settlePayment(fixture, payment)
          const { nonce, expirationLedger } = settled.nonces[0]!
          const tx = Option.getOrThrow(yield* onLedger((r) => r.transaction(settled.hash)))
          expect(tx.authorizations).toEqual([{ form, address: buyer.publicKey(), nonce, expirationLedger }])
          // Submitted again (another facilitator holding the same payload): it fails and moves nothing.
          const again = settlePayment(fixture, payment)
          expect(again.successful).toBe(false)
          expect(Option.getOrThrow(yield* onLedger((r) => r.transaction(again.hash)))).toMatchObject({
            successful: false,
            transfers: []
          })
        })
    )

  it.live(
    "a Horizon that skips transaction meta (as SDF's does) yields no transfers for an old transaction, never the envelope's",
    () =>
      Effect.gen(function* () {
        const bare = yield* ownLedger({ latestLedger: 500_000, horizonMeta: false })
        const hash = bare.addTransaction({ transfer: usdc(payer, payee, 70_000n), ledger: bare.oldestRpcLedger() - 10 })
        expect(Option.getOrThrow(yield* onLedger((r) => r.transaction(hash), {}, bare))).toMatchObject({
          successful: true,
          transfers: []
        })
      })
  )

  it.live("a facilitator that paid someone else: the transaction shows the other payee", () =>
    Effect.gen(function* () {
      const payment = yield* Effect.promise(() =>
        buildExactPayment(exactRequirements({ payTo: payee }), { validUntilLedger: fixture.latestLedger() + 50 })
      )
      const settled = settlePayment(fixture, payment, { pays: { to: stranger } })
      expect(Option.getOrThrow(yield* onLedger((r) => r.transaction(settled.hash))).transfers[0]!.to).toBe(stranger)
    })
  )
})

describe("a buyer-side build against the fixture RPC", () => {
  // Mostly the SDK's own promises (account, simulation, signing, sending): a plain test, reading the ledger by it.run.
  test("simulate records the payer's auth with a fresh nonce; signed and sent, the payment lands on the ledger", async () => {
    const buyer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 32))
    const server = new rpc.Server(fixture.rpcUrl, { allowHttp: true })
    const source = await server.getAccount(buyer.publicKey())
    const tx = new TransactionBuilder(source, { fee: "100", networkPassphrase: Networks.TESTNET })
      .addOperation(
        new Contract(TESTNET_USDC).call(
          "transfer",
          nativeToScVal(buyer.publicKey(), { type: "address" }),
          nativeToScVal(payee, { type: "address" }),
          nativeToScVal(25_000n, { type: "i128" })
        )
      )
      .setTimeout(60)
      .build()
    const simulation = await server.simulateTransaction(tx)
    if (!rpc.Api.isSimulationSuccess(simulation)) throw new Error("simulation failed")
    const [entry] = simulation.result!.auth
    const nonce = addressAuthorization(entry!)!.nonce
    const validUntil = simulation.latestLedger + 20
    const signedEntry = await authorizeEntry(entry!, buyer, validUntil, Networks.TESTNET)
    const assembled = rpc.assembleTransaction(tx, simulation).build()
    const op = assembled.operations[0] as Operation.InvokeHostFunction
    const final = new TransactionBuilder(source, {
      fee: assembled.fee,
      networkPassphrase: Networks.TESTNET,
      sorobanData: simulation.transactionData.build()
    })
      .addOperation(Operation.invokeHostFunction({ func: op.func, auth: [signedEntry] }))
      .setTimeout(60)
      .build()
    final.sign(buyer)
    const sent = await server.sendTransaction(final)
    expect(sent.status).toBe("PENDING")

    const landed = Option.getOrThrow(await it.run(onLedger((r) => r.transaction(sent.hash))))
    expect(landed).toMatchObject({ successful: true, transfers: [usdc(buyer.publicKey(), payee, 25_000n)] })
    expect(await it.run(onLedger((r) => r.nonceConsumed(buyer.publicKey(), nonce)))).toBe(true)
  })
})

describe("failures name the endpoint, never its secrets, and time out", () => {
  it.live("a key in the RPC URL's path stays out of the message", () =>
    Effect.gen(function* () {
      fixture.setFailing("rpc")
      const error = yield* failure((r) => r.latestLedger(), { sorobanRpcUrl: `${fixture.rpcUrl}/v2/SECRET-KEY-123` })
      expect(error.message).toContain(fixture.rpcUrl)
      expect(error.message).not.toContain("SECRET-KEY-123")
    })
  )

  it.live("a refused connection is LedgerUnavailable", () =>
    Effect.gen(function* () {
      const gone = startFixtureLedger()
      gone.stop()
      const error = yield* Effect.flip(onLedger((r) => r.latestLedger(), {}, gone))
      expect(error).toBeInstanceOf(LedgerUnavailable)
    })
  )

  it.live("an RPC slower than the timeout is LedgerUnavailable within about the timeout", () =>
    Effect.gen(function* () {
      fixture.setHanging("rpc")
      const started = Date.now()
      const error = yield* failure((r) => r.transaction("ef".repeat(32)), { timeoutMs: 300 })
      expect(error.message).toContain("did not answer within 300 ms")
      expect(Date.now() - started).toBeLessThan(2000)
      expect(fixture.waiting("rpc")).toBeGreaterThan(0)
    })
  )

  it.live("a Horizon slower than the timeout is LedgerUnavailable too", () =>
    Effect.gen(function* () {
      fixture.setHanging("horizon")
      const error = yield* failure((r) => r.transaction("ef".repeat(32)), { timeoutMs: 300 })
      expect(error.message).toContain("Horizon")
      expect(error.message).toContain("did not answer within 300 ms")
    })
  )
})
