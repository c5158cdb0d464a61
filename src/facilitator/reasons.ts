/**
 * The reason codes the embedded facilitator answers with: the vocabulary of the x402 reference
 * Stellar facilitator (`@x402/stellar`'s exact facilitator scheme), so a stock resource server or
 * client reads a refusal from this backend exactly as one from any other. docs/facilitator.md
 * says what each means here.
 */
export const Reason = {
  x402Version: "invalid_x402_version",
  unsupportedScheme: "unsupported_scheme",
  networkMismatch: "network_mismatch",
  invalidNetwork: "invalid_network",
  malformed: "invalid_exact_stellar_payload_malformed",
  wrongOperation: "invalid_exact_stellar_payload_wrong_operation",
  unsafeSource: "invalid_exact_stellar_payload_unsafe_tx_or_op_source",
  wrongAsset: "invalid_exact_stellar_payload_wrong_asset",
  wrongFunction: "invalid_exact_stellar_payload_wrong_function_name",
  facilitatorIsPayer: "invalid_exact_stellar_payload_facilitator_is_payer",
  wrongRecipient: "invalid_exact_stellar_payload_wrong_recipient",
  wrongAmount: "invalid_exact_stellar_payload_wrong_amount",
  simulationFailed: "invalid_exact_stellar_payload_simulation_failed",
  feeExceedsMaximum: "invalid_exact_stellar_payload_fee_exceeds_maximum",
  noTransferEvents: "invalid_exact_stellar_payload_no_transfer_events",
  multipleTransfers: "invalid_exact_stellar_payload_multiple_transfers",
  eventWrongAsset: "invalid_exact_stellar_payload_event_wrong_asset",
  eventWrongFrom: "invalid_exact_stellar_payload_event_wrong_from",
  eventWrongTo: "invalid_exact_stellar_payload_event_wrong_to",
  eventWrongAmount: "invalid_exact_stellar_payload_event_wrong_amount",
  noAuthEntries: "invalid_exact_stellar_payload_no_auth_entries",
  unsupportedCredential: "invalid_exact_stellar_payload_unsupported_credential_type",
  facilitatorInAuth: "invalid_exact_stellar_payload_facilitator_in_auth",
  expirationTooFar: "invalid_exact_stellar_signature_expiration_too_far",
  hasSubinvocations: "invalid_exact_stellar_payload_has_subinvocations",
  missingPayerSignature: "invalid_exact_stellar_payload_missing_payer_signature",
  pendingSignatures: "invalid_exact_stellar_payload_unexpected_pending_signatures",
  unexpectedVerify: "unexpected_verify_error",
  submissionFailed: "settle_exact_stellar_transaction_submission_failed",
  transactionFailed: "settle_exact_stellar_transaction_failed",
  signerSelection: "settle_exact_stellar_signer_selection_failed",
  unexpectedSettle: "unexpected_settle_error",
  /** x402 2.27's answer for a settle still unconfirmed at its deadline: the reconciler resolves it. */
  pending: "settlement_pending"
} as const
export type Reason = (typeof Reason)[keyof typeof Reason]

/** A refusal: the reference's code and a sentence for `invalidMessage` / `errorMessage`. */
export interface Refusal {
  readonly reason: Reason
  readonly message: string
}

export const refuse = (reason: Reason, message: string): Refusal => ({ reason, message })
