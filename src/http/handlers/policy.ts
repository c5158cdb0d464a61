import { HttpApiBuilder } from "@effect/platform"
import { SextantApi } from "../api/index.js"
import { notImplemented } from "./notImplemented.js"

export const PolicyHandlers = HttpApiBuilder.group(SextantApi, "policy", (handlers) =>
  handlers
    .handle("evaluate", () => notImplemented("POST /v1/policies/evaluate"))
    .handle("route", () => notImplemented("POST /v1/routes"))
)
