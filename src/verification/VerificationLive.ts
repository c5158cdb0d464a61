import { Layer } from "effect"
import { EvidenceReader } from "./EvidenceReader.js"
import { EvidenceRecorder } from "./EvidenceRecorder.js"
import { Prober } from "./Prober.js"

/**
 * Verification without its schedule: Prober (on-demand probes), EvidenceReader (for policy,
 * routing, settlement and receipts) and EvidenceRecorder. Needs the store's repositories
 * (StoreLive), AppConfig and an HttpClient (FetchHttpClient.layer in production). Add
 * ProbeSchedulerLive on top to probe the catalog periodically.
 */
export const VerificationLive = Layer.mergeAll(Prober.Live, EvidenceReader.Live).pipe(Layer.provideMerge(EvidenceRecorder.Live))
