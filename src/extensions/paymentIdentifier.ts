import { appendPaymentIdentifierToExtensions, generatePaymentId } from "@x402/extensions/payment-identifier"
import { Either, Schema } from "effect"
import { InvalidRequest } from "../domain/errors.js"
import { PaymentIdentifier } from "../domain/ids.js"
import { isObject } from "../domain/isObject.js"

/**
 * The x402 `payment-identifier` extension (specs/extensions/payment_identifier.md in the x402
 * repository): a client-chosen `id` in `paymentPayload.extensions["payment-identifier"].info.id`
 * that serves as the idempotency key of verify and settle.
 */
export const PAYMENT_IDENTIFIER = "payment-identifier"

const isPaymentIdentifier = Schema.is(PaymentIdentifier)

/** `extensions["payment-identifier"]` of an object that may carry extensions; undefined when absent. */
const extensionOf = (holder: unknown): unknown =>
  isObject(holder) && isObject(holder.extensions) ? holder.extensions[PAYMENT_IDENTIFIER] : undefined

const requiredIn = (extension: unknown) =>
  isObject(extension) && isObject(extension.info) && extension.info.required === true

const invalid = (message: string) =>
  new InvalidRequest({ message: `paymentPayload.extensions["${PAYMENT_IDENTIFIER}"]: ${message}` })

/**
 * The payment identifier of a verify or settle body, if it carries one. Refused (400):
 * an extension that is not `{info: {...}}`, an id outside the format, and no id when the resource
 * server declared it required. The declaration's `info.required` travels in the payload's echo of
 * the extension (the client copies PaymentRequired's extensions); a requirements object that
 * carries the declaration itself (`paymentRequirements.extensions`) is read too.
 */
export const paymentIdentifierOf = (request: {
  readonly paymentPayload: unknown
  readonly paymentRequirements: unknown
}): Either.Either<PaymentIdentifier | undefined, InvalidRequest> => {
  const extension = extensionOf(request.paymentPayload)
  const required = requiredIn(extension) || requiredIn(extensionOf(request.paymentRequirements))
  if (extension === undefined) {
    return required
      ? Either.left(
          invalid("the resource server requires a payment identifier (info.required is true) and none was sent")
        )
      : Either.right(undefined)
  }
  if (!isObject(extension) || !isObject(extension.info))
    return Either.left(invalid("expected an object with an `info` object"))
  const id = extension.info.id
  if (id === undefined) {
    return required ? Either.left(invalid("info.required is true, so info.id must be sent")) : Either.right(undefined)
  }
  if (!isPaymentIdentifier(id)) {
    return Either.left(invalid("info.id must be 16 to 128 characters of letters, digits, '_' and '-'"))
  }
  return Either.right(id)
}

/**
 * The idempotency key of a verify or settle: the `Idempotency-Key` header when sent, else the
 * payment identifier. A malformed or missing-but-required identifier is refused either way.
 */
export const idempotencyKeyOf = (
  header: string | undefined,
  request: { readonly paymentPayload: unknown; readonly paymentRequirements: unknown }
): Either.Either<string | undefined, InvalidRequest> => Either.map(paymentIdentifierOf(request), (id) => header ?? id)

/**
 * A client's side of the extension: when a seller's challenge declares `payment-identifier`, the
 * payload's extensions with a fresh identifier added (on a copy: the challenge is left as it came);
 * null when the challenge does not offer it. One identifier per payment: a retry of the same
 * signed payment sends the same one, a new payment a new one.
 */
export const withPaymentIdentifier = (
  challengeExtensions: Readonly<Record<string, unknown>> | undefined,
  payloadExtensions: Readonly<Record<string, unknown>> | undefined
): { readonly extensions: Record<string, unknown>; readonly id: string } | null => {
  if (!isObject(challengeExtensions) || challengeExtensions[PAYMENT_IDENTIFIER] === undefined) return null
  const id = generatePaymentId("sx_")
  const extensions = appendPaymentIdentifierToExtensions(
    structuredClone({ ...challengeExtensions, ...payloadExtensions }),
    id
  )
  const info = (extensions[PAYMENT_IDENTIFIER] as { info?: { id?: unknown } } | undefined)?.info
  return info?.id === id ? { extensions, id } : null
}
