import { Layer } from "effect"
import { EvidenceReader } from "./EvidenceReader.js"
import { EvidenceRecorder } from "./EvidenceRecorder.js"
import { Prober } from "./Prober.js"

/**
 * Verification without its schedule: Prober (on-demand probes), EvidenceReader (for policy,
 * routing, settlement and receipts) and EvidenceRecorder. Needs the store's repositories
 * (StoreLive) and AppConfig; requests to resources go through `Connector.ts`. Add
 * ProbeSchedulerLive on top to probe the catalog periodically.
 */
export const VerificationLive = Layer.mergeAll(Prober.Live, EvidenceReader.Live).pipe(Layer.provideMerge(EvidenceRecorder.Live))
