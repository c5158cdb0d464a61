import { Effect } from "effect"
import { NotImplemented } from "../../domain/errors.js"

/** The answer of an endpoint the contract declares but this build does not serve yet. */
export const notImplemented = (what: string) =>
  Effect.fail(new NotImplemented({ error: "NOT_IMPLEMENTED", message: `${what} is not implemented yet` }))
