import { HttpApiBuilder } from "@effect/platform"
import { SextantApi } from "../api/index.js"
import { notImplemented } from "./notImplemented.js"

export const VerificationHandlers = HttpApiBuilder.group(SextantApi, "verification", (handlers) =>
  handlers
    .handle("validate", () => notImplemented("POST /v1/validate"))
    .handle("metrics", () => notImplemented("GET /v1/resources/{id}/metrics"))
    .handle("observations", () => notImplemented("GET /v1/resources/{id}/observations"))
)
