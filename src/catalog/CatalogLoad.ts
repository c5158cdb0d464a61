import { Effect, Layer } from "effect"
import { AppConfig, readText } from "../config.js"
import { CatalogWritesRepo, type CatalogWritesRepoShape } from "../store/CatalogWritesRepo.js"
import { catalogContentKey, decodeCatalogFile } from "./catalogFile.js"

/**
 * Loads the configured catalog into the store at start; idempotent, so restarts change nothing.
 *
 * A catalog file whose content key (`catalogContentKey`) is the one the last committed load
 * recorded is not decoded or diffed: that content was validated and written then, and every
 * write since that could change a row it wrote forgets the key (CatalogWritesRepo). Anything else (a
 * changed file, a store with no key, an inline or bundled catalog) decodes and diffs, writing only
 * what changed; the key is recorded in the same transaction, so only a load that committed leaves
 * one. A file that does not decode stops start-up with its config error.
 */
export const CatalogLoad = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const repo = yield* CatalogWritesRepo
    const file = config.catalogFile
    if (file === null) {
      const written = yield* repo.upsertCatalog(config.catalog)
      yield* Effect.logInfo(`catalog loaded: ${config.catalog.length} resources, ${written} written`)
      return
    }
    const read = yield* readCatalogFile(repo, file, config.asset.decimals)
    if (read._tag === "Unchanged") {
      yield* Effect.logInfo(
        `catalog loaded: ${read.entries} resources, file unchanged since the last load, nothing written`
      )
      return
    }
    const written = yield* repo.upsertCatalog(read.entries, read.key)
    yield* Effect.logInfo(`catalog loaded: ${read.entries.length} resources, ${written} written`)
  })
)

/**
 * The file's entries and content key, or how many entries the last load held when it loaded this
 * content. Its own effect so the file's text (53 MB at 100k) is garbage before the write starts.
 */
const readCatalogFile = (repo: CatalogWritesRepoShape, file: string, decimals: number) =>
  Effect.gen(function* () {
    const text = yield* readText(file, "catalog")
    const key = catalogContentKey(text, decimals)
    const last = yield* repo.lastCatalogLoad()
    if (last?.contentKey === key) return { _tag: "Unchanged", entries: last.entries } as const
    return { _tag: "Changed", key, entries: yield* decodeCatalogFile(text, file, decimals) } as const
  })
