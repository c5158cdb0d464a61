import type { IngestionConfig } from "../config.js"
import type { PrincipalId } from "../domain/ids.js"
import type { CatalogEntry } from "../domain/resources.js"

/**
 * Ingestion quotas (docs/trust.md): how many untrusted entries one source, origin, principal and
 * payee may hold. Pure: the counts come from the store (CatalogWritesRepo.openCounts), and each entry
 * admitted is added to them, so a batch is judged as if written one entry at a time.
 */
export interface QuotaCounts {
  readonly source: number
  readonly origins: ReadonlyMap<string, number>
  readonly principals: ReadonlyMap<string, number>
  readonly payees: ReadonlyMap<string, number>
}

/**
 * The quota keys of an entry a source adds for a principal; null for an import, which the
 * operator configured (its source quota bounds it).
 */
export const quotaKeys = (entry: CatalogEntry, principal: PrincipalId | null) => ({
  origin: URL.canParse(entry.resource.url) ? new URL(entry.resource.url).origin : entry.resource.url,
  principal,
  payees: [...new Set(entry.paymentOptions.map((o) => o.payTo))]
})
export type QuotaKeys = ReturnType<typeof quotaKeys>

type Limits = Pick<IngestionConfig, "maxPerSource" | "maxPerOrigin" | "maxPerPrincipal" | "maxPerPayee">

/** Why one more entry with `keys` would exceed a quota, or null when it fits. */
export const quotaRefusal = (keys: QuotaKeys, counts: QuotaCounts, limits: Limits, source: string): string | null => {
  if (counts.source >= limits.maxPerSource) return `source ${source} holds its quota of ${limits.maxPerSource} entries`
  if ((counts.origins.get(keys.origin) ?? 0) >= limits.maxPerOrigin) {
    return `origin ${keys.origin} holds its quota of ${limits.maxPerOrigin} entries`
  }
  if (keys.principal !== null && (counts.principals.get(keys.principal) ?? 0) >= limits.maxPerPrincipal) {
    return `principal "${keys.principal}" added its quota of ${limits.maxPerPrincipal} entries`
  }
  const payee = keys.payees.find((p) => (counts.payees.get(p) ?? 0) >= limits.maxPerPayee)
  return payee === undefined ? null : `payee ${payee} is named by its quota of ${limits.maxPerPayee} entries`
}

/** The entries that fit, in order, each counted before the next is judged; the others with why. */
export const admit = <A>(
  items: ReadonlyArray<{ readonly item: A; readonly keys: QuotaKeys }>,
  counts: QuotaCounts,
  limits: Limits,
  source: string
): {
  readonly admitted: ReadonlyArray<A>
  readonly refused: ReadonlyArray<{ readonly item: A; readonly reason: string }>
} => {
  const running = {
    source: counts.source,
    origins: new Map(counts.origins),
    principals: new Map(counts.principals),
    payees: new Map(counts.payees)
  }
  const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1)
  const admitted: Array<A> = []
  const refused: Array<{ item: A; reason: string }> = []
  for (const { item, keys } of items) {
    const reason = quotaRefusal(keys, running, limits, source)
    if (reason !== null) {
      refused.push({ item, reason })
      continue
    }
    admitted.push(item)
    running.source++
    bump(running.origins, keys.origin)
    if (keys.principal !== null) bump(running.principals, keys.principal)
    for (const payee of keys.payees) bump(running.payees, payee)
  }
  return { admitted, refused }
}
