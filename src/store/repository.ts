import type { SqlError } from "@effect/sql"
import { Effect, type ParseResult, Schema } from "effect"

/** A failure of the store itself, or a row that does not decode: neither is the caller's to handle. */
type StoreFailure = SqlError.SqlError | ParseResult.ParseError

const tagged = (e: unknown, tag: string) => typeof e === "object" && e !== null && "_tag" in e && e._tag === tag

/** A failure of the store itself; a transaction (StoreTransactions) turns only this into a defect. */
export const isSqlError = (e: unknown): e is SqlError.SqlError => tagged(e, "SqlError")

const isStoreFailure = (e: unknown): e is StoreFailure => isSqlError(e) || tagged(e, "ParseError")

type Method = (...args: ReadonlyArray<any>) => Effect.Effect<any, any, any>

export type Repository<Methods> = {
  readonly [K in keyof Methods]: Methods[K] extends (...args: infer Args) => Effect.Effect<infer A, infer E, infer R>
    ? (...args: Args) => Effect.Effect<A, Exclude<E, StoreFailure>, R>
    : never
}

/**
 * The one rule at the repository boundary: a store failure (or a row that does not decode) has no
 * recovery in any caller, so it becomes a defect, which money paths never get past and the HTTP
 * layer answers 503 STORE_UNAVAILABLE (a failing store) or 500 INTERNAL (a row this code cannot
 * read). Every method also gets a span, `Repo.method`.
 */
export const repository = <Methods extends Record<string, Method>>(
  name: string,
  methods: Methods
): Repository<Methods> =>
  Object.fromEntries(
    Object.entries(methods).map(([key, method]) => [
      key,
      (...args: ReadonlyArray<unknown>) => atBoundary(`${name}.${key}`, method(...args))
    ])
  ) as Repository<Methods>

/** The boundary rule of `repository` for one call: for a generic method, whose type parameters its mapped type would lose. */
export const atBoundary = <A, E, R>(
  span: string,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, StoreFailure>, R> =>
  effect.pipe(Effect.catchIf(isStoreFailure, Effect.die), Effect.withSpan(span)) as Effect.Effect<
    A,
    Exclude<E, StoreFailure>,
    R
  >

/** Column types as both drivers return them: SQLite gives numbers, Postgres gives BIGINT and NUMERIC as strings. */
export const SqlNumber = Schema.Union(Schema.Number, Schema.NumberFromString)
export const SqlBigInt = Schema.Union(Schema.BigIntFromNumber, Schema.BigInt)
/** A boolean kept as 0 / 1. */
export const SqlFlag = Schema.transform(SqlNumber, Schema.Boolean, {
  decode: (n) => n === 1,
  encode: (b) => (b ? 1 : 0)
})

/**
 * Decodes rows with `schema`; a row that does not fit fails with a ParseError (a defect at the
 * boundary). The decoder is built once per schema: building it per call (a new Array schema each
 * time) recompiled the parser on every query, a large share of a read's CPU.
 */
export const decodeRows = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknown(Schema.Array(schema))
  return (rows: ReadonlyArray<unknown>) => decode(rows)
}

/** `items` in consecutive slices of at most `size`: bulk statements stay under the drivers' parameter limits. */
export const chunksOf = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const chunks: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size))
  return chunks
}
