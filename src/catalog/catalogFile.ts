import { createHash } from "node:crypto"
import { Either, Schema } from "effect"
import pkg from "../../package.json" with { type: "json" }
import { type ConfigError, checkCatalog, decodeCatalog, parseJson } from "../config.js"
import { CatalogEntry } from "../domain/resources.js"

/**
 * What a catalog file load depends on besides the file's bytes: this program (its version and the
 * entry schema, whose structure, literals and refinements' descriptions change with it), and the
 * config that judges the entries (the asset's decimals). Bump FORMAT when what a load writes of
 * an entry changes without any of those changing (the fingerprint, the stored columns).
 */
const FORMAT = 1
const schemaShape = JSON.stringify(Schema.Array(CatalogEntry).ast)

/**
 * The key of a catalog file's content as this program and config would load it: equal keys mean
 * a load would decode the same entries, pass the same checks and write the same rows.
 */
export const catalogContentKey = (text: string, decimals: number): string =>
  createHash("sha256")
    .update(JSON.stringify([FORMAT, pkg.version, decimals, schemaShape]))
    .update("\n")
    .update(text)
    .digest("base64url")

/** A catalog file's text decoded and checked, with the messages `sextant serve` has always stopped with. */
export const decodeCatalogFile = (
  text: string,
  path: string,
  decimals: number
): Either.Either<ReadonlyArray<CatalogEntry>, ConfigError> =>
  Either.gen(function* () {
    const entries = yield* decodeCatalog(yield* parseJson(text, path, "catalog"), "catalog")
    const inconsistency = checkCatalog(entries, decimals)
    if (inconsistency) return yield* Either.left(inconsistency)
    return entries
  })
