import type { PaymentRequired } from "@x402/core/schemas"
import { Clock, Effect, Either } from "effect"
import type { Config } from "../config.js"
import type { ResourceId } from "../domain/ids.js"
import type { McpTool } from "../domain/mcp.js"
import type { RecordedObservation } from "../domain/observations.js"
import type { HttpMethod, ResourcePaymentOption } from "../domain/resources.js"
import { baseUnitsToUsd } from "../domain/stellar.js"
import { judgeOffers, type OfferVerdict, offerNote } from "../extensions/offerReceipt.js"
import { type Answer, type AnswerTimeout, fetchAnswer, type Unreachable } from "../outbound/fetchAnswer.js"
import type { OutboundTargetRefused } from "../outbound/outboundGuard.js"
import { sortableId } from "../store/sortableId.js"
import {
  type ChallengeOption,
  type ChallengeReading,
  classify,
  type Deployment,
  isAcceptable,
  MAX_CHALLENGE_HEADER_BYTES,
  readChallenge
} from "../x402/challenge.js"
import { contradiction, representativeOption } from "./catalogMatch.js"

export interface ProbeTarget {
  readonly resourceId: ResourceId
  readonly url: string
  readonly method: HttpMethod
  /** The catalog's options for the resource; a challenge is judged against them. */
  readonly advertised: ReadonlyArray<ResourcePaymentOption>
  /** For an `mcp` resource: the tool to call at `url` (mcpProbe.ts) instead of an HTTP request. */
  readonly mcp?: McpTool | undefined
}

export type ProbeFailure = OutboundTargetRefused | Unreachable | AnswerTimeout

export interface Observed {
  readonly observation: RecordedObservation
  /** The decoded x402 challenge as the target sent it, null when none decoded. */
  readonly challenge: PaymentRequired | null
  /** Its payment options, v1 and v2 alike; empty without a challenge. */
  readonly options: ReadonlyArray<ChallengeOption>
}

/** An observation of `target` begun at `startMs` with nothing seen yet. */
export const blank = (target: ProbeTarget, startMs: number) => ({
  id: sortableId("obs", startMs),
  resourceId: target.resourceId,
  observedAt: new Date(startMs).toISOString(),
  method: target.method,
  url: target.url,
  httpStatus: null,
  latencyMs: null,
  x402Version: null,
  scheme: null,
  network: null,
  asset: null,
  payTo: null,
  amount: null,
  maxAmount: null,
  priceUsd: null,
  contradiction: null
})

export const failureObservation = (
  target: ProbeTarget,
  startMs: number,
  failure: ProbeFailure
): RecordedObservation => {
  switch (failure._tag) {
    case "OutboundTargetRefused":
      return { ...blank(target, startMs), outcome: "refused_target", detail: failure.reason }
    case "Unreachable":
      return { ...blank(target, startMs), outcome: "unreachable", detail: failure.reason }
    case "AnswerTimeout":
      return { ...blank(target, startMs), outcome: "timeout", detail: failure.reason }
  }
}

const describe = (reading: ChallengeReading, httpStatus: number, deployment: Deployment) => {
  if (httpStatus !== 402) return `answered ${httpStatus} instead of 402`
  switch (reading._tag) {
    case "NoChallenge":
      return "402 without a PAYMENT-REQUIRED header or an x402 v1 body"
    case "Malformed":
      return reading.reason
    case "Decoded":
      return reading.options.some((o) => isAcceptable(o, deployment))
        ? null
        : `no option pays on ${deployment.network} in ${deployment.assetContract} with a known scheme; offered ${
            reading.options.map((o) => `${o.scheme} on ${o.network} in ${o.asset}`).join(", ") || "nothing"
          }`
  }
}

/**
 * Turns what a probe got into its observation: the outcome code, and from the challenge the
 * option that best represents it plus any contradiction with the catalog. No I/O.
 */
export const observationOf = (
  target: ProbeTarget,
  startMs: number,
  endMs: number,
  result: Either.Either<Answer, ProbeFailure>,
  deployment: Deployment,
  decimals: number,
  priceTolerance: number,
  /** The bound on a v2 challenge's header: the probes' body cap, so a header is no larger than a body may be. */
  maxHeaderBytes: number = MAX_CHALLENGE_HEADER_BYTES
): Observed => {
  if (Either.isLeft(result)) {
    return { observation: failureObservation(target, startMs, result.left), challenge: null, options: [] }
  }
  const answer = result.right
  const reading: ChallengeReading =
    answer.httpStatus === 402 ? readChallenge(answer.header, answer.body, maxHeaderBytes) : { _tag: "NoChallenge" }
  const decoded = reading._tag === "Decoded" ? reading : null
  const option = decoded ? representativeOption(decoded.options, target.advertised, deployment) : null
  const conflict = decoded ? contradiction(decoded.options, target.advertised, priceTolerance) : null
  const detail = [
    answer.note,
    describe(reading, answer.httpStatus, deployment),
    conflict && `contradicts the catalog: ${conflict}`
  ]
    .filter((part): part is string => typeof part === "string")
    .join("; ")
  return {
    observation: {
      ...blank(target, startMs),
      httpStatus: answer.httpStatus,
      latencyMs: Math.max(0, Math.round(endMs - startMs)),
      outcome: classify(answer.httpStatus, reading, deployment),
      x402Version: option?.x402Version ?? null,
      scheme: option?.scheme ?? null,
      network: option?.network ?? null,
      asset: option?.asset ?? null,
      payTo: option?.payTo ?? null,
      amount: option?.amount ?? null,
      maxAmount: option?.maxAmount ?? null,
      priceUsd:
        option && isAcceptable(option, deployment) ? baseUnitsToUsd(option.maxAmount ?? option.amount, decimals) : null,
      detail: detail === "" ? null : detail,
      contradiction: conflict
    },
    challenge: decoded?.challenge ?? null,
    options: decoded?.options ?? []
  }
}

/**
 * A challenge's signed offers (`offer-receipt`) in its observation: who signed the terms goes in
 * the detail; terms that contradict their signed offer, or a signature that does not verify, are
 * a contradiction, the evidence against a seller that a catalog contradiction already is. No I/O.
 */
export const withOfferVerdict = (observed: Observed, verdict: OfferVerdict): Observed => {
  const { note, against } = offerNote(verdict)
  if (note === null && against === null) return observed
  const { observation } = observed
  const signer = verdict._tag === "signed" || verdict._tag === "contradicted" ? verdict.kid : null
  const join = (parts: ReadonlyArray<string | null>) =>
    parts.filter((p): p is string => p !== null && p !== "").join("; ") || null
  return {
    ...observed,
    observation: {
      ...observation,
      detail: join([observation.detail, note, against]),
      contradiction: join([observation.contradiction, against]),
      offerSigner: signer
    }
  }
}

/** One probe, bounded by `probes.timeoutMs` from DNS to the last body byte read. Never fails. */
export const observe = (target: ProbeTarget, config: Config) =>
  Effect.gen(function* () {
    const startMs = yield* Clock.currentTimeMillis
    const result = yield* Effect.either(fetchAnswer(target.url, target.method, config.probes))
    const endMs = yield* Clock.currentTimeMillis
    const observed = observationOf(
      target,
      startMs,
      endMs,
      result,
      { network: config.network, assetContract: config.asset.assetContract },
      config.asset.decimals,
      config.probes.priceTolerance,
      config.probes.maxBodyBytes
    )
    if (observed.challenge === null) return observed
    const challenge = observed.challenge
    const verdict = yield* Effect.promise(() => judgeOffers(challenge, { nowMs: endMs, probedUrl: target.url }))
    return withOfferVerdict(observed, verdict)
  })
