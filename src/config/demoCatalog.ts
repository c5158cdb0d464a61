import { Either, Schema } from "effect"
import type { CatalogEntry } from "../domain/resources.js"
import demoCatalog from "../store/demo-catalog.json" with { type: "json" }
import { type ConfigError, decodeCatalog } from "./decoding.js"
import { DEMO_BEHAVIOURS, type DemoBehaviour, DemoConfig, type DemoSettings, type VerticalConfig } from "./vertical.js"

/** The bundled demo catalog, moved to where this config runs the vertical and the demo providers. */

const WILDCARD_HOSTS = new Set(["0.0.0.0", "::", ""])
/** A host to connect to for a server listening on `host`: a wildcard bind is reached on loopback. */
export const reachableHost = (host: string) => (WILDCARD_HOSTS.has(host) ? "127.0.0.1" : host)

/** The bundled demo catalog lists the vertical and the demo providers at their defaults; they are moved to where they really run. */
const DEMO_VERTICAL_PREFIX = "http://127.0.0.1:4021/stellar-intel/"
const DEFAULT_DEMO = Schema.decodeSync(DemoConfig)({})

export const verticalOrigin = (vertical: VerticalConfig) =>
  vertical.publicUrl ?? `http://${reachableHost(vertical.host)}:${vertical.port}`

/** The catalog id of the demo provider with this behaviour; its endpoints live under `/<id>/v1/rwa/`. */
export const demoProviderId = (behaviour: DemoBehaviour) => `demo-${behaviour}`

export const demoOrigin = (demo: Pick<DemoConfig, "host" | "ports">, behaviour: DemoBehaviour) =>
  `http://${reachableHost(demo.host)}:${demo.ports[behaviour]}`

const moved = (entry: CatalogEntry, url: string, origin: string): CatalogEntry => ({
  ...entry,
  resource: { ...entry.resource, url },
  provider: { ...entry.provider, url: origin }
})

/**
 * The bundled demo catalog placed where this config runs the vertical and the demo providers. The
 * demo providers' entries are left out when they do not run, so nothing lists a port nobody serves.
 */
const placeDemoCatalog = (
  entries: ReadonlyArray<CatalogEntry>,
  vertical: VerticalConfig,
  demo: DemoSettings
): ReadonlyArray<CatalogEntry> =>
  entries.flatMap((entry) => {
    const url = entry.resource.url
    if (url.startsWith(DEMO_VERTICAL_PREFIX)) {
      const origin = verticalOrigin(vertical)
      return [moved(entry, `${origin}/${vertical.name}/${url.slice(DEMO_VERTICAL_PREFIX.length)}`, origin)]
    }
    const behaviour = DEMO_BEHAVIOURS.find((b) => url.startsWith(`${demoOrigin(DEFAULT_DEMO, b)}/`))
    if (behaviour === undefined) return [entry]
    if (!demo.enabled) return []
    const origin = demoOrigin(demo, behaviour)
    return [moved(entry, `${origin}${url.slice(demoOrigin(DEFAULT_DEMO, behaviour).length)}`, origin)]
  })

/** The bundled demo catalog as this config places it: the default catalog, and the demo providers' price list. */
export const bundledCatalog = (placement: {
  readonly vertical: VerticalConfig
  readonly demo: DemoSettings
}): Either.Either<ReadonlyArray<CatalogEntry>, ConfigError> =>
  Either.map(decodeCatalog(demoCatalog, "catalog (bundled demo)"), (entries) =>
    placeDemoCatalog(entries, placement.vertical, placement.demo)
  )
