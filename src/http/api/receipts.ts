import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { BadRequest, NotFound, Unauthorized, Unprocessable } from "../../domain/errors.js"
import {
  CommerceReceipt,
  CreateReceiptRequest,
  ReceiptVerification,
  SignerDisclosure
} from "../../domain/receipts.js"
import { ApiKeyAuth } from "../auth.js"
import { strict } from "./parse.js"

const IdPath = Schema.Struct({ id: Schema.String })

export class ReceiptsApi extends HttpApiGroup.make("receipts")
  .add(
    HttpApiEndpoint.post("create", "/v1/receipts")
      .setPayload(strict(CreateReceiptRequest))
      .addSuccess(CommerceReceipt)
      .addError(BadRequest)
      .addError(Unauthorized)
      .addError(Unprocessable)
      .middleware(ApiKeyAuth)
  )
  .add(HttpApiEndpoint.get("signer", "/v1/receipts/signer").addSuccess(SignerDisclosure))
  .add(
    HttpApiEndpoint.get("get", "/v1/receipts/:id")
      .setPath(IdPath)
      .addSuccess(CommerceReceipt)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.get("verify", "/v1/receipts/:id/verify")
      .setPath(IdPath)
      .addSuccess(ReceiptVerification)
      .addError(NotFound)
  ) {}
