import { Schema } from "effect"

/**
 * The ids the service hands out and looks up, each a brand of its own so that one cannot be passed
 * where another is expected. A brand adds no check of its own: each accepts what the API accepted
 * before it, and a format is enforced only where the code enforced one already (the payment
 * identifier's pattern; a resource record's length bounds stay on `ResourceInfo`). Values are
 * branded where they are made: decoded from a request or a row, or built with `make`.
 */

/**
 * A catalog resource: the catalog file's own id, `discovered-<16 hex>` for a URL probed through
 * `/v1/validate`, `bazaar-<16 hex>` for an ingested bazaar item.
 */
export const ResourceId = Schema.String.pipe(Schema.brand("ResourceId"))
export type ResourceId = typeof ResourceId.Type

/** A settlement journal entry (a UUID), the `id` of `/x402/settlements/:id`. */
export const SettlementId = Schema.String.pipe(Schema.brand("SettlementId"))
export type SettlementId = typeof SettlementId.Type

/**
 * A signed payment: the network hash of the buyer's signed transaction (64 lowercase hex). The
 * journal settles one payment once, whoever submits it and under whatever idempotency key.
 */
export const PaymentId = Schema.String.pipe(Schema.brand("PaymentId"))
export type PaymentId = typeof PaymentId.Type

/**
 * The x402 `payment-identifier` extension's client-chosen `info.id`: 16 to 128 characters of
 * letters, digits, `_` and `-`, as the extension defines it. Without an `Idempotency-Key` header
 * it is the idempotency key of verify and settle.
 */
export const PaymentIdentifier = Schema.String.pipe(
  Schema.pattern(/^[a-zA-Z0-9_-]{16,128}$/, {
    message: () => "expected 16 to 128 characters of letters, digits, '_' and '-'"
  }),
  Schema.brand("PaymentIdentifier")
)
export type PaymentIdentifier = typeof PaymentIdentifier.Type

/** A commerce receipt: `rcpt_<uuid>`, the `id` of `/v1/receipts/:id`. */
export const ReceiptId = Schema.String.pipe(Schema.brand("ReceiptId"))
export type ReceiptId = typeof ReceiptId.Type

/**
 * Who spends and answers for a request: an API key's `principal` (`local-operator` for the MCP
 * server on stdio). Without a key, settlement and verify stand the payer's Stellar address in for
 * it once its signature proved it, and ingestion quotas count a bazaar payer or `anonymous`.
 */
export const PrincipalId = Schema.String.pipe(Schema.brand("PrincipalId"))
export type PrincipalId = typeof PrincipalId.Type
