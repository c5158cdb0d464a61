import { Layer } from "effect"
import { EvidenceReader } from "./EvidenceReader.js"
import { EvidenceRecorder } from "./EvidenceRecorder.js"
import { Prober } from "./Prober.js"
import { Verification } from "./Verification.js"

/**
 * Verification without its schedule: Prober (on-demand probes), EvidenceReader (for policy,
 * routing, settlement and receipts), EvidenceRecorder, and Verification (what the verification
 * endpoints answer). Needs the store's repositories
 * (StoreLive) and AppConfig; requests to resources go through `Connector.ts`. Add
 * ProbeSchedulerLive on top to probe the catalog periodically.
 */
export const VerificationLive = Verification.Live.pipe(
  Layer.provideMerge(Layer.mergeAll(Prober.Live, EvidenceReader.Live)),
  Layer.provideMerge(EvidenceRecorder.Live)
)
