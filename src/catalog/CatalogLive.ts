import { Layer } from "effect"
import { Importer } from "./Importer.js"
import { Registration } from "./Registration.js"

/**
 * Ingestion into the catalog: registration by origin or URL, and imports from other discovery
 * services. Needs the Prober, the store and AppConfig. `ImportSchedulerLive` on top
 * pulls the configured sources periodically (started by `serve`).
 */
export const CatalogLive = Layer.mergeAll(Registration.Live, Importer.Live)
