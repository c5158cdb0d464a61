import { Either } from "effect"
import type { HttpMethod } from "../domain/resources.js"
import { sendsBody } from "../outbound/fetchAnswer.js"

/** Where a buyer's input goes: the URL (with a query string) and, for body methods, the JSON body. */
export interface Placement {
  readonly url: string
  readonly body?: string
}

type Scalar = string | number | boolean

const isScalar = (value: unknown): value is Scalar =>
  typeof value === "string" || (typeof value === "number" && Number.isFinite(value)) || typeof value === "boolean"

/**
 * Places `input` as the resource's catalogued `method` expects it: the JSON body of a POST, PUT or
 * PATCH (`{}` when there is no input), the query string of the others. A query carries an object
 * of scalars (or arrays of scalars, repeated keys); null members are left out. Anything else
 * cannot be sent to a GET resource and is refused before any request.
 */
export const placeInput = (url: string, method: HttpMethod, input: unknown): Either.Either<Placement, string> => {
  if (sendsBody(method)) return Either.right({ url, body: JSON.stringify(input ?? {}) })
  if (input === undefined || input === null) return Either.right({ url })
  if (typeof input !== "object" || Array.isArray(input)) {
    return Either.left(
      `a ${method} resource takes its input as query parameters: an object, not ${Array.isArray(input) ? "an array" : typeof input}`
    )
  }
  const target = new URL(url)
  for (const [key, value] of Object.entries(input)) {
    if (value === null) continue
    const values: ReadonlyArray<unknown> = Array.isArray(value) ? value : [value]
    const bad = values.find((v) => !isScalar(v))
    if (bad !== undefined)
      return Either.left(`query parameter "${key}" must be a string, number, boolean or a list of them`)
    for (const v of values) target.searchParams.append(key, String(v))
  }
  return Either.right({ url: target.href })
}

/** An MCP tool's arguments: the buyer's input object (`{}` when there is none); anything else is refused before any call. */
export const toolArguments = (input: unknown): Either.Either<Readonly<Record<string, unknown>>, string> => {
  if (input === undefined || input === null) return Either.right({})
  if (typeof input !== "object" || Array.isArray(input))
    return Either.left(
      `an MCP tool takes its input as arguments: an object, not ${Array.isArray(input) ? "an array" : typeof input}`
    )
  return Either.right(input as Record<string, unknown>)
}
