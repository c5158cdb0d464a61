import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Registration } from "../../catalog/Registration.js"
import { Principal } from "../../contract/auth.js"
import { SextantApi } from "../../contract/index.js"

export const RegistrationHandlers = HttpApiBuilder.group(SextantApi, "registration", (handlers) =>
  Effect.map(Registration, (registration) =>
    handlers.handle("register", ({ payload }) =>
      Effect.flatMap(Principal, (principal) => registration.register(payload, principal.id))
    )
  )
)
