import { authorizeEntry, type Keypair, rpc, StrKey, type Transaction, type xdr } from "@stellar/stellar-sdk"
import type { PaymentRequirementsV2 } from "@x402/core/schemas"
import type { PaymentPayload, PaymentRequirements, ResourceInfo } from "@x402/core/types"
import { Duration, Effect, Predicate, Schema } from "effect"
import { BaseUnits } from "../domain/stellar.js"
import { addressAuthorization } from "../ledger/authEntries.js"
import type { Deployment } from "../x402/challenge.js"
import {
  type Authorization,
  type BuildPaymentError,
  SimulationRejected,
  SorobanRpcFailure,
  UnpayableRequirements
} from "./errors.js"
import { passphraseOf, type TransferTerms, transferCall, transferTransaction } from "./transferCall.js"

/**
 * The ledger close time the expiration is computed with. The x402 Stellar spec says
 * `ledgerTimeout = ceil(maxTimeoutSeconds / estimatedLedgerSeconds)` with the network's estimate
 * "when available (fallback to 5 seconds)". @x402/stellar estimates it from a hard-coded public
 * Horizon; this wallet uses the fallback, which is the network's target close time.
 */
const LEDGER_SECONDS = 5

/**
 * Ledgers added past `latest + ceil(maxTimeoutSeconds / 5)`. None: the facilitator refuses an
 * expiration beyond its own `currentLedger + ceil(maxTimeoutSeconds / its estimate)` plus a
 * tolerance of 2 ledgers (@x402/stellar 2.9.0 facilitator, `invalid_exact_stellar_signature_
 * expiration_too_far`), and its estimate may be 6 s when ledgers close slowly; its current ledger
 * is never older than ours, so the spec's figure is the margin.
 */
const EXPIRATION_MARGIN_LEDGERS = 0

const RPC_TIMEOUT = Duration.seconds(15)

export interface SignedPayment {
  /** `{x402Version: 2, resource, accepted, payload: {transaction}}`, ready for `PAYMENT-SIGNATURE`. */
  readonly paymentPayload: PaymentPayload
  /** What identifies the payment on the ledger (its nonce) and until when it may settle. */
  readonly authorization: Authorization
}

export interface BuildPaymentInput {
  /** One option of a decoded x402 v2 challenge (`accepts[i]`). */
  readonly requirements: PaymentRequirements
  /** The challenge's `resource`, echoed in the payload as x402 v2 clients do. */
  readonly resource?: ResourceInfo
  /** The payer's key: it signs the Soroban authorisation, never a transaction. */
  readonly signer: Keypair
  /** Soroban RPC used to simulate (http allowed, for local nodes and tests). */
  readonly rpcUrl: string
  /** The inclusion fee bid (stroops, `ledger.inclusionFeeStroops`); the resource fee comes from simulation. */
  readonly inclusionFeeStroops: number
  /** The only network and asset contract this wallet pays in. */
  readonly deployment: Deployment
}

const isBaseUnits = Schema.is(BaseUnits)

/** An option as a decoded challenge states it (@x402/core's schema: any network string, `extra` maybe null). */
export type OfferedRequirements = PaymentRequirementsV2

/**
 * Why this wallet will not sign for `requirements`, or null when it will: the x402 Stellar spec's
 * `exact` on the deployment's network and asset, a positive amount, a Stellar payee, and fees
 * sponsored by the facilitator (the spec's only flow: it is the transaction source).
 */
export const refusalOf = (requirements: OfferedRequirements, deployment: Deployment): UnpayableRequirements | null => {
  const refuse = (reason: string) => new UnpayableRequirements({ reason })
  if (requirements.scheme !== "exact") return refuse(`scheme ${requirements.scheme} is not paid, only exact`)
  if (requirements.network !== deployment.network) {
    return refuse(`network ${requirements.network} is not this deployment's ${deployment.network}`)
  }
  if (requirements.asset !== deployment.assetContract) {
    return refuse(`asset ${requirements.asset} is not this deployment's ${deployment.assetContract}`)
  }
  if (!isBaseUnits(requirements.amount) || BigInt(requirements.amount) === 0n) {
    return refuse(`amount ${JSON.stringify(requirements.amount)} is not a positive amount in base units`)
  }
  if (!StrKey.isValidEd25519PublicKey(requirements.payTo) && !StrKey.isValidContract(requirements.payTo)) {
    return refuse(`payTo ${JSON.stringify(requirements.payTo)} is not a Stellar address`)
  }
  if (!Number.isInteger(requirements.maxTimeoutSeconds) || requirements.maxTimeoutSeconds <= 0) {
    return refuse("maxTimeoutSeconds must be a positive whole number of seconds")
  }
  if (requirements.extra?.areFeesSponsored !== true)
    return refuse("the exact scheme on Stellar needs extra.areFeesSponsored: true")
  return null
}

const rpcCall = <A>(method: string, call: () => Promise<A>) =>
  Effect.tryPromise({
    try: call,
    catch: (e) => new SorobanRpcFailure({ reason: `${method}: ${e instanceof Error ? e.message : String(e)}` })
  }).pipe(
    Effect.timeoutFail({
      duration: RPC_TIMEOUT,
      onTimeout: () => new SorobanRpcFailure({ reason: `${method}: no answer within ${Duration.format(RPC_TIMEOUT)}` })
    })
  )

const simulate = (server: rpc.Server, transaction: Transaction, step: string) =>
  rpcCall("simulateTransaction", () => server.simulateTransaction(transaction)).pipe(
    Effect.filterOrFail(
      (sim): sim is rpc.Api.SimulateTransactionSuccessResponse =>
        rpc.Api.isSimulationSuccess(sim) && !rpc.Api.isSimulationRestore(sim),
      (sim) =>
        new SimulationRejected({
          reason: rpc.Api.isSimulationError(sim)
            ? `${step}: the simulation failed: ${sim.error}`
            : `${step}: the simulation asks to restore archived ledger entries first`
        })
    )
  )

/**
 * The one authorisation a wallet signs for this payment: the payer's address credentials over
 * exactly the transfer it built, with nothing nested. Simulation on a current network records
 * `ADDRESS_V2` credentials (CAP-71), an older one `ADDRESS`: both are signed as they come
 * (`authorizeEntry` builds the preimage of each). An RPC answering anything else (another contract
 * call, a sub-invocation, a second signer, delegated credentials) is not signed for: the RPC is not
 * trusted with what the key authorises.
 */
const payerEntry = (sim: rpc.Api.SimulateTransactionSuccessResponse, terms: TransferTerms) => {
  const entries = sim.result?.auth ?? []
  const [entry, ...others] = entries
  const expected = transferCall(terms).invocation.toXdr("base64")
  if (entry === undefined || others.length > 0) {
    return new SimulationRejected({
      reason: `the simulation asks for ${entries.length} authorisations; the transfer needs exactly one, the payer's`
    })
  }
  const authorization = addressAuthorization(entry)
  if (authorization === null) {
    return new SimulationRejected({
      reason: "the simulation's authorisation does not use address credentials (ADDRESS or ADDRESS_V2)"
    })
  }
  if (authorization.address !== terms.from) {
    return new SimulationRejected({ reason: "the simulation's authorisation is not the payer's" })
  }
  if (entry.rootInvocation.toXdr("base64") !== expected) {
    return new SimulationRejected({
      reason: "the simulation's authorisation covers something other than the transfer built"
    })
  }
  return entry
}

const authorizationOf = (entry: xdr.SorobanAuthorizationEntry, payer: string): Authorization => {
  const signed = addressAuthorization(entry)
  return { payer, nonce: signed?.nonce.toString() ?? "", expirationLedger: signed?.expirationLedger ?? 0 }
}

/**
 * Builds and signs a Stellar x402 v2 `exact` payment as a wallet does, following
 * specs/schemes/exact/scheme_exact_stellar.md of the x402 repository ("Protocol Flow", steps 3-5,
 * and "PaymentPayload `payload` Field"):
 *
 * 1. check the requirements are ones this wallet pays (`exact`, the deployment's network and asset,
 *    fees sponsored);
 * 2. read the latest ledger; the authorisation expires at `latest + ceil(maxTimeoutSeconds / 5)`;
 * 3. simulate `transfer(payer, payTo, amount)` on the asset contract, from the null source
 *    account, to learn the authorisation the payer must sign (a fresh nonce from the RPC);
 * 4. sign that address-credential entry (`authorizeEntry`; `ADDRESS_V2` or `ADDRESS`, as
 *    simulation recorded it), after checking it covers exactly this transfer;
 * 5. simulate again with the signature in place (signature checks cost resources), and assemble
 *    the footprint, the simulation's resource fee on top of the configured inclusion fee, and the
 *    signed entry into the transaction;
 * 6. answer `{x402Version: 2, resource, accepted: requirements, payload: {transaction}}`.
 *
 * Only Soroban RPC at `rpcUrl` is contacted: @x402/stellar's client would also ask a public Horizon.
 */
export const buildExactPayment = (input: BuildPaymentInput): Effect.Effect<SignedPayment, BuildPaymentError> =>
  Effect.gen(function* () {
    const { requirements, signer } = input
    const refusal = refusalOf(requirements, input.deployment)
    if (refusal) return yield* refusal
    const terms: TransferTerms = {
      asset: requirements.asset,
      from: signer.publicKey(),
      to: requirements.payTo,
      amount: BigInt(requirements.amount)
    }
    const server = yield* Effect.try({
      try: () => new rpc.Server(input.rpcUrl, { allowHttp: new URL(input.rpcUrl).protocol === "http:" }),
      catch: () => new SorobanRpcFailure({ reason: `${input.rpcUrl} is not a usable Soroban RPC URL` })
    })
    const draft = (auth: ReadonlyArray<xdr.SorobanAuthorizationEntry>) =>
      transferTransaction({
        network: requirements.network,
        terms,
        auth,
        timeoutSeconds: requirements.maxTimeoutSeconds,
        inclusionFeeStroops: input.inclusionFeeStroops
      })

    const latest = yield* rpcCall("getLatestLedger", () => server.getLatestLedger())
    const expiration =
      latest.sequence + Math.ceil(requirements.maxTimeoutSeconds / LEDGER_SECONDS) + EXPIRATION_MARGIN_LEDGERS

    const recorded = yield* simulate(server, draft([]), "recording the authorisation")
    const entry = payerEntry(recorded, terms)
    if (Predicate.isTagged(entry, "SimulationRejected")) return yield* entry
    const signed = yield* Effect.tryPromise({
      try: () => authorizeEntry(entry, signer, expiration, passphraseOf(requirements.network)),
      catch: () => new SimulationRejected({ reason: "the simulation's authorisation cannot be signed" })
    })

    const unassembled = draft([signed])
    const enforced = yield* simulate(server, unassembled, "checking the signed authorisation")
    const transaction = yield* Effect.try({
      try: () => rpc.assembleTransaction(unassembled, enforced).build(),
      catch: (e) =>
        new SimulationRejected({
          reason: `the simulation cannot be assembled: ${e instanceof Error ? e.message : String(e)}`
        })
    })
    return {
      paymentPayload: {
        x402Version: 2,
        ...(input.resource === undefined ? {} : { resource: input.resource }),
        accepted: requirements,
        payload: { transaction: transaction.toXdr() }
      },
      authorization: authorizationOf(signed, signer.publicKey())
    }
  })
