import { Predicate } from "effect"

/**
 * Whether a value (a thrown one, or one member of a union) is the tagged error `T`, told by its
 * `_tag` as `Effect.catchTag` tells it, never by its class: `Predicate.isTagged`, narrowing to `T`.
 * The tag is checked against `T`'s own at compile time.
 */
export const isTaggedAs = <T extends { readonly _tag: string }>(value: unknown, tag: T["_tag"]): value is T =>
  Predicate.isTagged(value, tag)
