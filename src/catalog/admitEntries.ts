import { Effect } from "effect"
import type { IngestionConfig } from "../config.js"
import type { CatalogWritesRepoShape } from "../store/CatalogWritesRepo.js"
import { admit, type QuotaKeys } from "./ingestionQuota.js"

/**
 * The items of `source` that fit the ingestion quotas, judged against the store's counts now. Two
 * ingestions at once may each see the other's entries missing: a quota can be overshot by what
 * runs concurrently, never by one caller in sequence.
 */
export const admitted = <A>(
  resources: CatalogWritesRepoShape,
  limits: IngestionConfig,
  source: string,
  items: ReadonlyArray<{ readonly item: A; readonly keys: QuotaKeys }>
) =>
  Effect.map(
    resources.openCounts(source, {
      origins: items.map((i) => i.keys.origin),
      principals: items.flatMap((i) => (i.keys.principal === null ? [] : [i.keys.principal])),
      payees: items.flatMap((i) => i.keys.payees)
    }),
    (counts) => admit(items, counts, limits, source)
  )
