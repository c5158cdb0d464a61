import { Duration, Effect, Either, Redacted, Ref, Schedule } from "effect"
import type { Config, EmbeddedFacilitator } from "../config.js"
import { networkPassphrase } from "../domain/stellar.js"
import type { FacilitatorStatus, VerifyResponse } from "../domain/x402.js"
import { channelKeypair, makeSourcePool } from "../facilitator/channels.js"
import { belowFloor, type SettleCounts, stroopsOf } from "../facilitator/health.js"
import { makeFacilitatorRpc, type RpcUnavailable } from "../facilitator/ledgerClient.js"
import { type PaymentRequest, readRequest, rebuild } from "../facilitator/payment.js"
import type { Refusal } from "../facilitator/reasons.js"
import { judgeSimulation } from "../facilitator/simulation.js"
import type { SubmitContext } from "../facilitator/submit.js"
import { type CheckedPayment, checkPayment, expirationWindow } from "../facilitator/verifyRules.js"
import { loadOrCreateFacilitatorKey } from "../keys/stellarKey.js"
import type { InstrumentsShape } from "../telemetry/Instruments.js"
import { makeEmbeddedSettle } from "./embeddedSettle.js"
import { type BackendClient, BackendFailure, type RawSupported } from "./FacilitatorClient.js"

type Verify = typeof VerifyResponse.Type

/**
 * The embedded Stellar `exact` facilitator as one backend of the pool: the same three calls an
 * HTTP facilitator answers, run in this process with the operator's fee account (and its channel
 * accounts) against the configured `ledger` endpoints. It reads the ledger only when a payment is
 * verified or settled, or on `balanceCheckSeconds` when the operator set it.
 */
export const makeEmbeddedBackend = (
  entry: EmbeddedFacilitator,
  index: number,
  config: Config,
  instruments: InstrumentsShape
) =>
  Effect.gen(function* () {
    const key = yield* loadOrCreateFacilitatorKey(`facilitators[${index}].feeAccountKeyFile`, entry.feeAccountKeyFile)
    if (key.created)
      yield* Effect.logInfo(
        `created the fee account key ${key.path} (mode 0600); fund ${key.address} to let facilitator "${entry.id}" settle`
      )
    if (key.exposed) yield* Effect.logWarning(`${key.path} is readable by group or others; chmod 600 it`)
    const feeAccount = Redacted.value(key.signer)
    const channels = Array.from({ length: entry.channels }, (_, i) => channelKeypair(feeAccount, i))
    const sources = yield* makeSourcePool(channels.length === 0 ? [feeAccount] : channels)
    const own: ReadonlySet<string> = new Set([key.address, ...channels.map((c) => c.publicKey())])
    const passphrase = networkPassphrase(entry.network)
    const rpc = makeFacilitatorRpc(config.ledger, entry.network, config.ledger.timeoutMs)
    const context: SubmitContext = {
      rpc,
      passphrase,
      feeAccount,
      feeBump: channels.length > 0,
      inclusionFee: config.ledger.inclusionFeeStroops,
      feeCeilingStroops: BigInt(config.budgets.feeCeilingStroops),
      pollIntervalMs: entry.pollIntervalMs
    }
    const balance = yield* Ref.make<bigint | null>(null)
    const counts = yield* Ref.make<SettleCounts>({ settled: 0, failed: 0, pending: 0, refused: 0 })
    const floor = stroopsOf(entry.minFeeBalanceXlm)

    const unreachable = (e: RpcUnavailable) =>
      new BackendFailure({ backendId: entry.id, kind: "Unreachable", status: null, detail: e.message })
    const count = (outcome: keyof SettleCounts, ledgerSeconds: number | null = null) =>
      Effect.zipRight(
        Ref.update(counts, (c) => ({ ...c, [outcome]: c[outcome] + 1 })),
        instruments.embeddedSettle(entry.id, outcome, ledgerSeconds)
      )

    const scope = yield* Effect.scope
    // One read at a time: a burst of settles asks the ledger once, not once each.
    const reading = yield* Effect.makeSemaphore(1)
    /** The balance and lease gauges of `/metrics`, set from what this backend knows now. */
    const reportState = Effect.flatMap(Ref.get(balance), (b) =>
      Effect.flatMap(sources.inUse, (n) => instruments.embeddedState(entry.id, b, n))
    )
    const readBalance = rpc.account(key.address).pipe(
      Effect.flatMap((account) => Ref.set(balance, account?.balanceStroops ?? 0n)),
      Effect.zipRight(reportState),
      Effect.catchAll((e) =>
        Effect.logWarning(`facilitator "${entry.id}": the fee account balance could not be read: ${e.message}`)
      ),
      reading.withPermitsIfAvailable(1),
      Effect.asVoid
    )
    if (entry.balanceCheckSeconds !== null) {
      yield* readBalance.pipe(
        Effect.repeat(Schedule.spaced(Duration.seconds(entry.balanceCheckSeconds))),
        Effect.forkScoped
      )
    }

    /** The checks that need no simulation, against the ledger's current window. */
    const check = (request: PaymentRequest) =>
      Effect.gen(function* () {
        const latest = yield* rpc.latestLedger
        const window = expirationWindow(latest, request.maxTimeoutSeconds, yield* rpc.ledgerSeconds(latest))
        return checkPayment(request.transaction, request.terms, own, window, passphrase)
      })

    /** The simulation rules, run with the fee account as source: what it needs is what the payment carries. */
    const simulate = (request: PaymentRequest, payment: CheckedPayment) =>
      Effect.map(
        rpc.simulate(rebuild(payment, key.address, 0n, context.inclusionFee, request.maxTimeoutSeconds, passphrase)),
        (answer) => judgeSimulation(answer, payment.payer, request.terms, payment.auth)
      )

    const verify = (body: unknown) =>
      Effect.gen(function* () {
        const request = readRequest(body, entry.network)
        if (Either.isLeft(request)) return refusedVerify(request.left, undefined)
        const checked = yield* check(request.right)
        if (Either.isLeft(checked)) return refusedVerify(checked.left, undefined)
        const simulated = yield* simulate(request.right, checked.right)
        return Either.isLeft(simulated)
          ? refusedVerify(simulated.left, checked.right.payer)
          : ({ isValid: true, payer: checked.right.payer } satisfies Verify)
      }).pipe(Effect.mapError(unreachable), Effect.withSpan("EmbeddedFacilitator.verify"))

    const settle = makeEmbeddedSettle({
      entry,
      context,
      sources,
      check,
      simulate,
      unreachable,
      count,
      readBalance,
      reportState,
      scope
    })

    const supported: RawSupported = {
      kinds: [{ x402Version: 2, scheme: "exact", network: entry.network, extra: { areFeesSponsored: true } }],
      extensions: [],
      signers: { [entry.network]: [...own] }
    }

    const status = Effect.gen(function* () {
      const feeBalance = yield* Ref.get(balance)
      return {
        network: entry.network,
        feeAccount: key.address,
        feeBalanceStroops: feeBalance === null ? null : feeBalance.toString(),
        minFeeBalanceStroops: floor.toString(),
        channels: channels.length,
        leasesInUse: yield* sources.inUse,
        settles: yield* Ref.get(counts)
      } satisfies FacilitatorStatus["embedded"]
    })

    return {
      id: entry.id,
      url: `embedded ${entry.network} (fee account ${key.address})`,
      supported: () => Effect.succeed(supported),
      verify: (body: unknown, _timeout: Duration.DurationInput) => verify(body),
      settle,
      unhealthyReason: () => {
        const current = Effect.runSync(Ref.get(balance))
        return current !== null && belowFloor(current, floor)
          ? `fee account ${key.address} holds ${current} stroops, below the floor of ${floor}`
          : null
      },
      embedded: status
    } satisfies BackendClient
  })

const refusedVerify = (refusal: Refusal, payer: string | undefined): Verify => ({
  isValid: false,
  invalidReason: refusal.reason,
  invalidMessage: refusal.message,
  ...(payer === undefined ? {} : { payer })
})
