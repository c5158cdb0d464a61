import { Layer } from "effect"
import { Registration } from "./Registration.js"

/** Ingestion into the catalog: registration by origin or URL. Needs the Prober, the store, AppConfig and an HttpClient. */
export const CatalogLive = Layer.mergeAll(Registration.Live)
