import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { operatorPrincipal } from "../../contract/auth.js"
import { SextantApi } from "../../contract/index.js"
import { Curation } from "../../curation/Curation.js"

export const CurationHandlers = HttpApiBuilder.group(SextantApi, "curation", (handlers) =>
  Effect.gen(function* () {
    const curation = yield* Curation
    const as = <Reason extends string | undefined>(reason: Reason) =>
      Effect.map(operatorPrincipal, (actor) => ({ actor, reason }))
    return handlers
      .handle("quarantine", ({ path, payload }) =>
        Effect.flatMap(as(payload.reason), (author) => curation.quarantine(path.id, author))
      )
      .handle("unquarantine", ({ path, urlParams }) =>
        Effect.flatMap(as(urlParams.reason), (author) => curation.unquarantine(path.id, author))
      )
      .handle("list", ({ path, payload }) =>
        Effect.flatMap(as(payload.reason), (author) => curation.list(path.id, author))
      )
      .handle("unlist", ({ path, payload }) =>
        Effect.flatMap(as(payload.reason), (author) => curation.unlist(path.id, author))
      )
      .handle("delete", ({ path, urlParams }) =>
        Effect.flatMap(as(urlParams.reason), (author) => curation.remove(path.id, author))
      )
  })
).pipe(Layer.provide(Curation.Live))
