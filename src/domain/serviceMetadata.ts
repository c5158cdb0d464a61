import { sanitizeResourceServiceMetadata } from "@x402/extensions/bazaar"

/**
 * The bazaar's service metadata of a resource: `serviceName`, `tags`, `iconUrl`. Every source
 * (the bazaar extension, catalog imports, origin registration, the catalog file) passes through
 * upstream's own `sanitizeResourceServiceMetadata`, so what Sextant stores and serves is what a
 * stock facilitator would: invalid fields are dropped, not refused, and tags are trimmed,
 * deduplicated and bounded by upstream's rules.
 */
export interface ServiceMetadata {
  readonly serviceName?: string
  readonly tags?: ReadonlyArray<string>
  readonly iconUrl?: string
}

/** Upstream checks each field's type itself, so a source's raw values are handed over as they came. */
export const serviceMetadataOf = (resource: {
  readonly url: string
  readonly serviceName?: unknown
  readonly tags?: unknown
  readonly iconUrl?: unknown
}): ServiceMetadata =>
  sanitizeResourceServiceMetadata(resource as Parameters<typeof sanitizeResourceServiceMetadata>[0])
