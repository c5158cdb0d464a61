import { Effect, Option, Schema } from "effect"
import { InvalidRequest } from "./errors.js"

/**
 * Page sizes of every paged read: what a request gets without `limit`, and the most it may ask
 * for. No answer of the service grows with the catalog.
 */
export const PAGE_LIMITS = {
  resources: { default: 100, max: 1000 },
  search: { default: 50, max: 200 },
  observations: { default: 50, max: 500 },
  /** Fallbacks and rejections of one route answer, each. */
  routes: { default: 20, max: 200 }
} as const

/**
 * Where a page ended: the last item's sort key. `scope` ties a search cursor to the filters that
 * produced it, so a cursor is never applied to another query's order.
 */
const Position = Schema.Struct({
  v: Schema.Literal(1),
  kind: Schema.String,
  id: Schema.String,
  relevance: Schema.optional(Schema.Number),
  scope: Schema.optional(Schema.String)
})
export type Position = Omit<typeof Position.Type, "v" | "kind">

const decodePosition = Schema.decodeUnknownOption(Schema.parseJson(Position))

/**
 * Cursors are opaque to clients (base64url of the position), hold only sort keys, and need no
 * server state: a cursor stays valid across restarts and across instances.
 */
export const encodeCursor = (kind: string, position: Position): string =>
  Buffer.from(JSON.stringify({ v: 1, kind, ...position })).toString("base64url")

/** The position a cursor names, or none when it is not a cursor of `kind` this service issued. */
export const decodeCursor = (kind: string, cursor: string): Option.Option<Position> =>
  /^[A-Za-z0-9_-]{1,2048}$/.test(cursor)
    ? decodePosition(Buffer.from(cursor, "base64url").toString("utf8")).pipe(
        Option.filter((p) => p.kind === kind),
        Option.map(({ v: _v, kind: _kind, ...position }) => position)
      )
    : Option.none()

/** The position of a cursor a client sent: a cursor of another listing, or no cursor at all, is the caller's mistake (400). */
export const readCursor = (kind: string, cursor: string): Effect.Effect<Position, InvalidRequest> =>
  Option.match(decodeCursor(kind, cursor), {
    onNone: () => new InvalidRequest({ message: "cursor: not a cursor of this listing (pass nextCursor unchanged)" }),
    onSome: Effect.succeed
  })

/** A short stable fingerprint of a query's filters (FNV-1a, 32 bits): enough to catch a cursor reused on another query. */
export const scopeOf = (parts: ReadonlyArray<unknown>): string => {
  const text = JSON.stringify(parts)
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash.toString(36)
}

/** A cursor is valid only as this service issued it, so its format says so: `cursor`, not any string. */
export const Cursor = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2048)).annotations({
  description: "nextCursor of the previous page; opaque",
  jsonSchema: { type: "string", minLength: 1, maxLength: 2048, format: "cursor" }
})

/** `nextCursor` of a page: pass it back as `cursor` for the next page; null on the last one. */
export const NextCursor = Schema.NullOr(Schema.String).annotations({
  description: "pass as cursor to read the next page; null on the last page"
})
