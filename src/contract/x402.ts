import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import {
  AllFacilitatorsFailed,
  AmountUsdMismatch,
  DelegatedCredentialsRefused,
  FacilitatorsNotReady,
  RateLimited,
  FeeBudgetExhausted,
  IdempotencyKeyReused,
  InvalidPayerSignature,
  MalformedPaymentTransaction,
  NoHealthyFacilitator,
  NonceAlreadyConsumed,
  AuthorizationExpiresTooLate,
  NotFound,
  PaymentAlreadySubmitted,
  PolicyDenied,
  SettlementInProgress,
  SettlementIndeterminate,
  SettlementUnresolved,
  SourceAccountCredentialsRefused,
  TransferAmountMismatch,
  TransferAssetMismatch,
  TransferRecipientMismatch,
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
import { ApiKeyAuth } from "./auth.js"
import { allIssues, failsWith, queryDateTime, queryInt } from "./parse.js"

/** Verify and settle take the same optional key; without it, the payment-identifier extension's id is the key. */
const IdempotencyHeaders = Schema.Struct({ "idempotency-key": Schema.optional(IdempotencyKey) })

const SettlementsQuery = allIssues(Schema.Struct({
  state: Schema.optional(SettlementState),
  /** ISO time: only entries created before it (the `createdAt` of the last entry of a page). */
  before: Schema.optional(queryDateTime),
  limit: Schema.optional(queryInt({ minimum: 1, maximum: 200 }))
}))

const SettlementList = Schema.Struct({ settlements: Schema.Array(SettlementRecord) }).annotations({
  identifier: "SettlementList"
})

/** Every refusal of the settle pipeline, in the order of its steps. */
const SettleErrors = [
  MalformedPaymentTransaction,
  InvalidPayerSignature,
  DelegatedCredentialsRefused,
  SourceAccountCredentialsRefused,
  IdempotencyKeyReused,
  PaymentAlreadySubmitted,
  SettlementInProgress,
  SettlementUnresolved,
  UnsupportedPaymentKind,
  FacilitatorsNotReady,
  UnsupportedAsset,
  NoHealthyFacilitator,
  PolicyDenied,
  TransferAssetMismatch,
  TransferRecipientMismatch,
  TransferAmountMismatch,
  AmountUsdMismatch,
  FeeBudgetExhausted,
  NonceAlreadyConsumed,
  AuthorizationExpiresTooLate,
  AllFacilitatorsFailed,
  SettlementIndeterminate,
  RateLimited
] as const

/** Facilitator-compatible surface: a stock HTTPFacilitatorClient with base `<service>/x402` talks to it. */
export class X402Api extends HttpApiGroup.make("x402")
  .add(HttpApiEndpoint.get("supported", "/x402/supported").addSuccess(SupportedResponse).pipe(failsWith(FacilitatorsNotReady)))
  .add(
    HttpApiEndpoint.post("verify", "/x402/verify")
      .setPayload(allIssues(FacilitatorRequest))
      .setHeaders(IdempotencyHeaders)
      .addSuccess(VerifyResponse)
      .pipe(failsWith(DelegatedCredentialsRefused, SourceAccountCredentialsRefused, IdempotencyKeyReused, UnsupportedPaymentKind, FacilitatorsNotReady, NoHealthyFacilitator, AllFacilitatorsFailed, RateLimited))
      .middleware(ApiKeyAuth)
  )
  .add(
    HttpApiEndpoint.post("settle", "/x402/settle")
      .setPayload(allIssues(SettleRequest))
      .setHeaders(IdempotencyHeaders)
      .addSuccess(SettleResponse)
      .pipe(failsWith(...SettleErrors))
      .middleware(ApiKeyAuth)
  )
  .add(
    HttpApiEndpoint.get("facilitators", "/x402/facilitators")
      .addSuccess(FacilitatorsResponse)
      .middleware(ApiKeyAuth)
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
