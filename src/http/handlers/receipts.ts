import { HttpApiBuilder } from "@effect/platform"
import { SextantApi } from "../api/index.js"
import { notImplemented } from "./notImplemented.js"

export const ReceiptsHandlers = HttpApiBuilder.group(SextantApi, "receipts", (handlers) =>
  handlers
    .handle("create", () => notImplemented("POST /v1/receipts"))
    .handle("signer", () => notImplemented("GET /v1/receipts/signer"))
    .handle("get", () => notImplemented("GET /v1/receipts/{id}"))
    .handle("verify", () => notImplemented("GET /v1/receipts/{id}/verify"))
)
