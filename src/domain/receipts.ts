import { Schema } from "effect"
import { ReceiptId, ResourceId } from "./ids.js"
import { AgentPolicy } from "./policy.js"
import { OptimizeFor } from "./routes.js"
import { BaseUnits, Capability, PaymentScheme, StellarNetwork } from "./stellar.js"

export const SignatureAlgorithm = Schema.Literal("ed25519", "hmac-sha256").annotations({
  identifier: "SignatureAlgorithm"
})
export type SignatureAlgorithm = typeof SignatureAlgorithm.Type

/** 32 bytes as 64 lowercase hex characters, the form of both response digests and Stellar transaction hashes. */
const Hex32 = (what: string) =>
  Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/, { message: () => `expected ${what}` }))

const Sha256Hex = Hex32("a lowercase hex SHA-256 digest")

/** A Stellar transaction hash as Horizon and the facilitators write it. */
export const TransactionHash = Hex32("a Stellar transaction hash (64 lowercase hex characters)")

export const ReceiptRequest = Schema.Struct({
  capability: Capability,
  constraints: Schema.optional(AgentPolicy),
  optimizeFor: Schema.optional(OptimizeFor),
  intent: Schema.optional(Schema.String.pipe(Schema.maxLength(4096)))
}).annotations({ identifier: "ReceiptRequest" })

export const ReceiptPayment = Schema.Struct({
  protocol: Schema.Literal("x402"),
  network: StellarNetwork,
  scheme: PaymentScheme,
  asset: Schema.String,
  amount: BaseUnits,
  maxAmount: BaseUnits,
  // Not pattern-checked on the way out: receipts stored before requests were checked must still read back.
  transactionHash: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ReceiptPayment" })

/**
 * The seller's own receipt of the purchase (the x402 `offer-receipt` extension), as its paid answer
 * carried it: a JWS signed with the seller's key, named in its header by a `did:jwk` key id.
 */
export const SellerReceipt = Schema.Struct({
  format: Schema.Literal("jws"),
  signature: Schema.String.pipe(Schema.maxLength(8192))
}).annotations({ identifier: "SellerReceipt" })
export type SellerReceipt = typeof SellerReceipt.Type

export const ReceiptRouting = Schema.Struct({
  optimizeFor: OptimizeFor,
  selectedResourceId: ResourceId,
  optionIndex: Schema.Int,
  score: Schema.Number,
  fallbacks: Schema.Array(ResourceId),
  rejectedCount: Schema.Int,
  decidedAt: Schema.String
}).annotations({ identifier: "ReceiptRouting" })

/** The service the buyer used: the routing selection or one of its fallbacks. */
export const ReceiptService = Schema.Struct({
  resourceId: ResourceId,
  providerId: Schema.String,
  name: Schema.String,
  url: Schema.String,
  payTo: Schema.String,
  /** Its rank in the routing decision: 1 is the selection, higher ranks are fallbacks. */
  rank: Schema.Int,
  /** The resource's payment option the payment agrees with (routing's ranked option when both fit). */
  optionIndex: Schema.Int
}).annotations({ identifier: "ReceiptService" })

export const ReceiptResponse = Schema.Struct({
  status: Schema.Int,
  bodySha256: Sha256Hex
}).annotations({ identifier: "ReceiptResponse" })

export const CommerceReceipt = Schema.Struct({
  receiptId: ReceiptId,
  request: ReceiptRequest,
  routing: ReceiptRouting,
  service: ReceiptService,
  payment: ReceiptPayment,
  response: ReceiptResponse,
  /** Present when the seller signed a receipt: signed over with the rest, so it verifies offline with it. */
  sellerReceipt: Schema.optional(SellerReceipt),
  timestamp: Schema.String,
  serviceSignature: Schema.String,
  serviceSigner: Schema.String,
  signatureAlgorithm: SignatureAlgorithm
}).annotations({ identifier: "CommerceReceipt" })
export type CommerceReceipt = typeof CommerceReceipt.Type

export const CreateReceiptRequest = Schema.Struct({
  request: ReceiptRequest,
  resourceId: Schema.optional(ResourceId),
  payment: Schema.Struct({
    network: StellarNetwork,
    scheme: PaymentScheme,
    asset: Schema.String,
    amount: BaseUnits,
    maxAmount: Schema.optional(BaseUnits),
    transactionHash: Schema.optional(TransactionHash)
  }),
  response: Schema.Struct({
    status: Schema.Int.pipe(Schema.between(100, 599)),
    bodySha256: Schema.optional(Sha256Hex),
    body: Schema.optional(Schema.String)
  }),
  /** The seller's signed receipt from the paid answer; checked (signature, transaction) before it is carried. */
  sellerReceipt: Schema.optional(SellerReceipt)
}).annotations({ identifier: "CreateReceiptRequest" })
export type CreateReceiptRequest = typeof CreateReceiptRequest.Type

export const ReceiptVerification = Schema.Struct({
  receiptId: ReceiptId,
  valid: Schema.Boolean,
  algorithm: Schema.Literal("ed25519", "hmac-sha256", "unknown"),
  signer: Schema.NullOr(Schema.String),
  reason: Schema.String
}).annotations({ identifier: "ReceiptVerification" })
export type ReceiptVerification = typeof ReceiptVerification.Type

export const SignerDisclosure = Schema.Struct({
  mode: SignatureAlgorithm,
  algorithm: SignatureAlgorithm,
  /** Base64 of the raw 32-byte Ed25519 key; null in HMAC mode. */
  publicKey: Schema.NullOr(Schema.String),
  /** The same key as a Stellar G... address. */
  stellarPublicKey: Schema.NullOr(Schema.String),
  /** The value receipts carry in `serviceSigner`: the base64 key, or the HMAC key id. */
  serviceSigner: Schema.String,
  offlineVerifiable: Schema.Boolean,
  note: Schema.String
}).annotations({ identifier: "SignerDisclosure" })
export type SignerDisclosure = typeof SignerDisclosure.Type
