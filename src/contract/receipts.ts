import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { NoEligibleProvider, NotFound, PaymentMismatch, RateLimited } from "../domain/errors.js"
import { ReceiptId } from "../domain/ids.js"
import { CommerceReceipt, CreateReceiptRequest, ReceiptVerification, SignerDisclosure } from "../domain/receipts.js"
import { ApiKeyAuth } from "./auth.js"
import { failsWith, strict } from "./parse.js"

const ReceiptIdPath = Schema.Struct({ id: ReceiptId })

export class ReceiptsApi extends HttpApiGroup.make("receipts")
  .add(
    HttpApiEndpoint.post("create", "/v1/receipts")
      .setPayload(strict(CreateReceiptRequest))
      .addSuccess(CommerceReceipt)
      .pipe(failsWith(NoEligibleProvider, PaymentMismatch, RateLimited))
      .middleware(ApiKeyAuth)
  )
  .add(HttpApiEndpoint.get("signer", "/v1/receipts/signer").addSuccess(SignerDisclosure))
  .add(
    HttpApiEndpoint.get("get", "/v1/receipts/:id")
      .setPath(ReceiptIdPath)
      .addSuccess(CommerceReceipt)
      .pipe(failsWith(NotFound))
  )
  .add(
    HttpApiEndpoint.get("verify", "/v1/receipts/:id/verify")
      .setPath(ReceiptIdPath)
      .addSuccess(ReceiptVerification)
      .pipe(failsWith(NotFound))
  ) {}
