import { HttpApiBuilder } from "@effect/platform"
import { SextantApi } from "../api/index.js"
import { notImplemented } from "./notImplemented.js"

export const X402Handlers = HttpApiBuilder.group(SextantApi, "x402", (handlers) =>
  handlers
    .handle("supported", () => notImplemented("GET /x402/supported"))
    .handle("verify", () => notImplemented("POST /x402/verify"))
    .handle("settle", () => notImplemented("POST /x402/settle"))
    .handle("facilitators", () => notImplemented("GET /x402/facilitators"))
    .handle("settlement", () => notImplemented("GET /x402/settlements/{id}"))
)
