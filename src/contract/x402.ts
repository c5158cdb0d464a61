import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import {
  AllFacilitatorsFailed,
  AmountUsdMismatch,
  AuthorizationExpiresTooLate,
  DelegatedCredentialsRefused,
  FacilitatorsNotReady,
  FeeBudgetExhausted,
  IdempotencyKeyReused,
  InvalidPayerSignature,
  MalformedPaymentTransaction,
  NoHealthyFacilitator,
  NonceAlreadyConsumed,
  NotFound,
  PaymentAlreadySubmitted,
  PolicyDenied,
  RateLimited,
  SettlementIndeterminate,
  SettlementInProgress,
  SettlementUnresolved,
  SourceAccountCredentialsRefused,
  TransferAmountMismatch,
  TransferAssetMismatch,
  TransferRecipientMismatch,
  Unauthorized,
  UnsupportedAsset,
  UnsupportedPaymentKind
} from "../domain/errors.js"
import { SettlementId } from "../domain/ids.js"
import {
  FacilitatorRequest,
  FacilitatorsResponse,
  IdempotencyKey,
  SettlementRecord,
  SettlementState,
  SettleRequest,
  SettleResponse,
  SupportedResponse,
  VerifyResponse
} from "../domain/x402.js"
import {
  type RefusalContext,
  type SextantErrorBody,
  settleRefusalSchema,
  verifyRefusalSchema,
  type X402Operation,
  x402Refusal
} from "../domain/x402Refusals.js"
import { API_WIDE_ERRORS } from "./apiErrors.js"
import { ApiKeyAuth } from "./auth.js"
import { allIssues, failsWith, failsWithBodies, queryDateTime, queryInt } from "./parse.js"

/** Verify and settle take the same optional key; without it, the payment-identifier extension's id is the key. */
const IdempotencyHeaders = Schema.Struct({ "idempotency-key": Schema.optional(IdempotencyKey) })

const SettlementsQuery = allIssues(
  Schema.Struct({
    state: Schema.optional(SettlementState),
    /** ISO time: only entries created before it (the `createdAt` of the last entry of a page). */
    before: Schema.optional(queryDateTime),
    limit: Schema.optional(queryInt({ minimum: 1, maximum: 200 }))
  })
)

const SettlementList = Schema.Struct({ settlements: Schema.Array(SettlementRecord) }).annotations({
  identifier: "SettlementList"
})

/** Reading the signed payment (step 2): settle and verify alike. */
const PaymentReadErrors = [
  MalformedPaymentTransaction,
  InvalidPayerSignature,
  DelegatedCredentialsRefused,
  SourceAccountCredentialsRefused
] as const

/** Kind, policy, payee and transfer terms (steps 4 to 7): settle and verify alike (`PaymentChecks`). */
const PaymentCheckErrors = [
  UnsupportedPaymentKind,
  FacilitatorsNotReady,
  UnsupportedAsset,
  NoHealthyFacilitator,
  PolicyDenied,
  TransferAssetMismatch,
  TransferRecipientMismatch,
  TransferAmountMismatch,
  AmountUsdMismatch
] as const

/** What the ledger read refuses before forwarding (step 9): settle and verify alike. */
const LedgerCheckErrors = [NonceAlreadyConsumed, AuthorizationExpiresTooLate] as const

/** Every refusal of the settle pipeline, in the order of its steps. */
const SettleErrors = [
  ...PaymentReadErrors,
  IdempotencyKeyReused,
  PaymentAlreadySubmitted,
  SettlementInProgress,
  SettlementUnresolved,
  ...PaymentCheckErrors,
  FeeBudgetExhausted,
  ...LedgerCheckErrors,
  AllFacilitatorsFailed,
  SettlementIndeterminate,
  RateLimited
] as const

/** Every refusal of a verify: the checks it shares with settle (no budget, no journal), then forwarding. */
const VerifyErrors = [
  ...PaymentReadErrors,
  IdempotencyKeyReused,
  ...PaymentCheckErrors,
  ...LedgerCheckErrors,
  AllFacilitatorsFailed,
  RateLimited
] as const

/**
 * Verify and settle answer every refusal, their own and any request's (auth, body checks, store,
 * shutdown), as this service's error body and the x402 VerifyResponse / SettleResponse in one
 * (domain/x402Refusals.ts), each code with its own status. These combined schemas are all the two
 * endpoints declare, so the document describes what is sent.
 */
const VerifyRefusals = [...VerifyErrors, ...API_WIDE_ERRORS, Unauthorized].map((error) => verifyRefusalSchema(error))
const SettleRefusals = [...SettleErrors, ...API_WIDE_ERRORS, Unauthorized].map((error) => settleRefusalSchema(error))

type Failure<Errors extends ReadonlyArray<Schema.Schema.Any>> = Schema.Schema.Type<
  Errors[number] | (typeof API_WIDE_ERRORS)[number] | typeof Unauthorized
>
/** What a verify handler may fail with before it is answered as a refusal. */
export type VerifyFailure = Failure<typeof VerifyErrors>
export type SettleFailure = Failure<typeof SettleErrors>
export type VerifyRefusal = Schema.Schema.Type<(typeof VerifyRefusals)[number]>
export type SettleRefusal = Schema.Schema.Type<(typeof SettleRefusals)[number]>

/** A verify failure as the refusal the endpoint declares: its class is in the declared list, so the code has its schema. */
export const verifyRefusal = (error: VerifyFailure, context: RefusalContext) =>
  x402Refusal("verify", error, context) as VerifyRefusal
export const settleRefusal = (error: SettleFailure, context: RefusalContext) =>
  x402Refusal("settle", error, context) as SettleRefusal

const refusalSchemas: Record<X402Operation, ReadonlyArray<Schema.Schema.AnyNoContext>> = {
  verify: VerifyRefusals,
  settle: SettleRefusals
}

const ownBody = (error: object): SextantErrorBody | undefined => {
  const body = error as {
    readonly error?: unknown
    readonly message?: unknown
    readonly code?: unknown
    readonly retryAfterSeconds?: unknown
  }
  if (typeof body.error !== "string" || typeof body.message !== "string") return undefined
  return {
    error: body.error,
    message: body.message,
    ...(typeof body.code === "string" ? { code: body.code } : {}),
    ...(typeof body.retryAfterSeconds === "number" ? { retryAfterSeconds: body.retryAfterSeconds } : {})
  }
}

/**
 * Any failure met on verify or settle (the handler's refusal, or one from outside it: auth, the body
 * checks, the store, a shutdown) as the combined body its endpoint declares and that code's status;
 * undefined when the endpoint declares no such code. Answered directly rather than left to HttpApi,
 * whose error union would encode the body with the first schema it fits: the plain error class of
 * the same code, which drops the x402 fields.
 */
export const x402RefusalAnswer = (operation: X402Operation, error: unknown, context: RefusalContext) => {
  if (typeof error !== "object" || error === null) return undefined
  const own = ownBody(error)
  const refusal =
    "isValid" in error || "success" in error
      ? error
      : own === undefined
        ? undefined
        : x402Refusal(operation, own, context)
  const schema = refusal === undefined ? undefined : refusalSchemas[operation].find((s) => Schema.is(s)(refusal))
  return schema === undefined
    ? undefined
    : { status: HttpApiSchema.getStatusErrorAST(schema.ast), body: refusal as object }
}

/** Facilitator-compatible surface: a stock HTTPFacilitatorClient with base `<service>/x402` talks to it. */
export class X402Api extends HttpApiGroup.make("x402")
  .add(
    HttpApiEndpoint.get("supported", "/x402/supported")
      .addSuccess(SupportedResponse)
      .pipe(failsWith(FacilitatorsNotReady))
  )
  .add(
    HttpApiEndpoint.post("verify", "/x402/verify")
      .setPayload(allIssues(FacilitatorRequest))
      .setHeaders(IdempotencyHeaders)
      .addSuccess(VerifyResponse)
      .pipe(failsWithBodies(...VerifyRefusals))
      .middleware(ApiKeyAuth)
  )
  .add(
    HttpApiEndpoint.post("settle", "/x402/settle")
      .setPayload(allIssues(SettleRequest))
      .setHeaders(IdempotencyHeaders)
      .addSuccess(SettleResponse)
      .pipe(failsWithBodies(...SettleRefusals))
      .middleware(ApiKeyAuth)
  )
  .add(
    HttpApiEndpoint.get("facilitators", "/x402/facilitators").addSuccess(FacilitatorsResponse).middleware(ApiKeyAuth)
  )
  .add(
    HttpApiEndpoint.get("settlements", "/x402/settlements")
      .setUrlParams(SettlementsQuery)
      .addSuccess(SettlementList)
      .middleware(ApiKeyAuth)
  )
  .add(
    HttpApiEndpoint.get("settlement", "/x402/settlements/:id")
      .setPath(Schema.Struct({ id: SettlementId }))
      .addSuccess(SettlementRecord)
      .pipe(failsWith(NotFound))
      .middleware(ApiKeyAuth)
  ) {}
