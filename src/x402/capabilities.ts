import { Either, Schema } from "effect"
import { SupportedKind, type SupportedResponse } from "../domain/x402.js"
import type { RawSupported } from "./FacilitatorClient.js"

/** What one healthy backend can do, as the pool keeps it between polls. */
export interface Capabilities {
  readonly kinds: ReadonlyArray<SupportedKind>
  readonly extensions: ReadonlyArray<string>
  readonly signers: Readonly<Record<string, unknown>>
}

const decodeKind = Schema.decodeUnknownEither(SupportedKind)

/**
 * The kinds of a backend's `/supported` this service can speak: Stellar networks and the `exact` /
 * `upto` schemes. A backend that also serves other chains is still usable for the Stellar ones.
 */
export const capabilitiesOf = (raw: RawSupported): Capabilities => ({
  kinds: raw.kinds.flatMap((kind) => Either.match(decodeKind(kind), { onLeft: () => [], onRight: (k) => [k] })),
  extensions: raw.extensions,
  signers: raw.signers
})

export const advertises = (capabilities: Capabilities, network: string, scheme: string): boolean =>
  capabilities.kinds.some((k) => k.network === network && k.scheme === scheme)

const kindKey = (kind: SupportedKind) => `${kind.network} ${kind.scheme}`

/** Signer lists of the same network key are merged; other values keep the first backend's. */
const mergeSigners = (into: Record<string, unknown>, from: Readonly<Record<string, unknown>>) => {
  for (const [key, value] of Object.entries(from)) {
    const existing = into[key]
    if (existing === undefined) into[key] = value
    else if (Array.isArray(existing) && Array.isArray(value)) into[key] = [...new Set([...existing, ...value])]
  }
}

/**
 * The union of healthy backends' capabilities in the stock SupportedResponse shape, de-duplicated
 * by network and scheme (SPEC "Facilitator backends" rule 4). Backends are given in config order,
 * so a kind's `extra` is the first advertiser's: that is the backend a request is forwarded to first.
 */
export const mergeSupported = (healthy: ReadonlyArray<Capabilities>): SupportedResponse => {
  const kinds = new Map<string, SupportedKind>()
  const extensions = new Set<string>()
  const signers: Record<string, unknown> = {}
  for (const capabilities of healthy) {
    for (const kind of capabilities.kinds) if (!kinds.has(kindKey(kind))) kinds.set(kindKey(kind), kind)
    for (const extension of capabilities.extensions) extensions.add(extension)
    mergeSigners(signers, capabilities.signers)
  }
  return { kinds: [...kinds.values()], extensions: [...extensions], signers }
}
