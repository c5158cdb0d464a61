import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SextantApi } from "../../contract/index.js"
import { ReceiptService } from "../../receipts/ReceiptService.js"

/** `/v1/receipts`: create (routed, signed, stored), read, check against the live signer, disclose the signer. */
export const ReceiptsHandlers = HttpApiBuilder.group(SextantApi, "receipts", (handlers) =>
  handlers
    .handle("create", ({ payload }) => Effect.flatMap(ReceiptService, (receipts) => receipts.create(payload)))
    .handle("signer", () => Effect.flatMap(ReceiptService, (receipts) => receipts.signer()))
    .handle("get", ({ path }) => Effect.flatMap(ReceiptService, (receipts) => receipts.get(path.id)))
    .handle("verify", ({ path }) => Effect.flatMap(ReceiptService, (receipts) => receipts.verify(path.id)))
)
