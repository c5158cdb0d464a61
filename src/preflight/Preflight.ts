import { Clock, Context, Effect, Layer, Schema } from "effect"
import { AppConfig } from "../config.js"
import { InvalidRequest } from "../domain/errors.js"
import { noEvidence, type PayeeEvidence } from "../domain/evidence.js"
import type { PreflightAnswer, PreflightRequest } from "../domain/preflight.js"
import type { ResourceRecord } from "../domain/resources.js"
import { BaseUnits, baseUnitsToUsd } from "../domain/stellar.js"
import { policyContext } from "../policy/evaluate.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { type ChallengeOption, type ChallengeReading, decodeChallenge, readChallenge } from "../x402/challenge.js"
import { evidenceOf, type Judged, type PreflightContext, preflightVerdict, type Verdict } from "./verdict.js"

export interface PreflightShape {
  /**
   * The verdict on a payment a client is about to make. Fails only on a request that names no
   * option or URL, or whose challenge does not decode (InvalidRequest); an unknown URL is judged
   * on what is known of its origin, or answers UNRATED.
   */
  readonly judge: (request: PreflightRequest) => Effect.Effect<PreflightAnswer, InvalidRequest>
}

/** `POST /v1/preflight`: a payment about to be made, judged on the evidence of its URL and origin. */
export class Preflight extends Context.Tag("sextant/Preflight")<Preflight, PreflightShape>() {
  static readonly Live = Layer.effect(
    Preflight,
    Effect.suspend(() => make)
  )
}

/**
 * Entries read at the URL, and of its origin's others those paying the payee and the first by id:
 * enough to judge and to show what is known, bounded so a crowded origin costs what a small one does.
 */
export const ENTRIES_READ = 5

const invalid = (message: string) => new InvalidRequest({ message })
const isBaseUnits = Schema.is(BaseUnits)

/** The challenge the request carries, decoded; null when it carries none. */
const challengeOf = (request: PreflightRequest): ChallengeReading | null => {
  if (request.paymentRequiredHeader !== undefined) {
    const header = request.paymentRequiredHeader
    return readChallenge((name) => (name.toUpperCase() === "PAYMENT-REQUIRED" ? header : null), undefined)
  }
  return request.paymentRequired === undefined ? null : decodeChallenge(request.paymentRequired)
}

const judgedOf = (
  option: Pick<ChallengeOption, "scheme" | "network" | "asset" | "payTo" | "amount" | "maxAmount">,
  optionIndex: number | null,
  usd: (amount: string, asset: string) => number | null
): Judged => ({
  optionIndex,
  scheme: option.scheme,
  network: option.network,
  asset: option.asset,
  payTo: option.payTo,
  amount: option.maxAmount ?? option.amount,
  maxAmount: option.maxAmount,
  amountUsd: usd(option.maxAmount ?? option.amount, option.asset)
})

/** The options to judge: the chosen requirements, else every option of the challenge. */
const candidatesOf = (
  request: PreflightRequest,
  reading: ChallengeReading | null,
  usd: (amount: string, asset: string) => number | null
) =>
  Effect.gen(function* () {
    if (reading !== null && reading._tag !== "Decoded") {
      return yield* invalid(
        reading._tag === "Malformed"
          ? `the challenge: ${reading.reason}`
          : "the challenge: not an x402 PAYMENT-REQUIRED header"
      )
    }
    const options = reading?.options ?? []
    if (request.requirements !== undefined) {
      const r = request.requirements
      if (!isBaseUnits(r.amount))
        return yield* invalid(`requirements.amount must be base units (digits), got "${r.amount}"`)
      const index = options.findIndex(
        (o) =>
          o.scheme === r.scheme &&
          o.network === r.network &&
          o.asset === r.asset &&
          o.payTo === r.payTo &&
          o.amount === r.amount
      )
      const maxAmount = r.scheme === "upto" ? r.amount : null
      return [judgedOf({ ...r, maxAmount }, index < 0 ? null : index, usd)]
    }
    if (options.length === 0)
      return yield* invalid(
        "send the challenge (paymentRequired or paymentRequiredHeader) with at least one option, or the chosen requirements"
      )
    const unreadable = options.findIndex((o) => !isBaseUnits(o.amount))
    if (unreadable >= 0)
      return yield* invalid(`the challenge's option ${unreadable} asks an amount that is not base units`)
    return options.map((o, i) => judgedOf(o, i, usd))
  })

/** The URL a challenge names: v2's `resource.url`, v1's per-option `resource`. */
const resourceUrlOf = (reading: Extract<ChallengeReading, { _tag: "Decoded" }>): string | undefined =>
  reading.challenge.x402Version === 1 ? reading.challenge.accepts[0]?.resource : reading.challenge.resource?.url

const originOf = (url: string) => (URL.canParse(url) ? new URL(url).origin : null)

const make = Effect.gen(function* () {
  const repo = yield* ResourceReadsRepo
  const reader = yield* EvidenceReader
  const config = yield* AppConfig
  const deployment = { network: config.network, assetContract: config.asset.assetContract }
  const usd = (amount: string, asset: string) =>
    asset === config.asset.assetContract ? baseUnitsToUsd(amount, config.asset.decimals) : null

  const withEvidence = (records: ReadonlyArray<ResourceRecord>) =>
    Effect.map(
      reader.forResources(records.map((r) => r.resource.id)),
      (found): Array<PayeeEvidence> =>
        records.map((record) => ({ record, evidence: found.get(record.resource.id) ?? noEvidence(record.resource.id) }))
    )

  const judge = (request: PreflightRequest) =>
    Effect.gen(function* () {
      const reading = challengeOf(request)
      const candidates = yield* candidatesOf(request, reading, usd)
      const url = request.url ?? (reading?._tag === "Decoded" ? resourceUrlOf(reading) : undefined)
      const origin = url === undefined ? null : originOf(url)
      if (url === undefined || origin === null)
        return yield* invalid("url: send the URL paid for (or a challenge whose resource.url names it)")
      const read = yield* withEvidence(
        yield* repo.aroundUrl(url, origin, [...new Set(candidates.map((c) => c.payTo))], ENTRIES_READ)
      )
      const urlEvidence = read.filter((e) => e.record.resource.url === url)
      const originEvidence = read.filter((e) => e.record.resource.url !== url)
      const nowMs = yield* Clock.currentTimeMillis
      const now = new Date(nowMs)
      const context: PreflightContext = {
        ...policyContext(config, now),
        deployment,
        priceTolerance: config.probes.priceTolerance
      }
      const policy = request.policy ?? {}
      const verdicts = candidates.map((option: Judged) => ({
        option,
        verdict: preflightVerdict({ option, atUrl: urlEvidence, atOrigin: originEvidence, policy, context })
      }))
      const chosen = mostFavourable(verdicts)
      const { maxAmount: _, ...judged } = chosen.option
      return {
        verdict: chosen.verdict.verdict,
        reasons: chosen.verdict.reasons,
        url,
        origin,
        rating: chosen.verdict.rating,
        judged,
        evidence: evidenceOf(urlEvidence, originEvidence),
        evaluatedAt: now.toISOString()
      } satisfies PreflightAnswer
    }).pipe(Effect.withSpan("Preflight.judge"))

  return Preflight.of({ judge })
})

const rank = { ALLOW: 0, WARN: 1, DENY: 2 } as const

/** The lowest-indexed option with the most favourable verdict: can this payment be made at all? */
const mostFavourable = <A extends { readonly verdict: Verdict }>(verdicts: ReadonlyArray<A>): A =>
  verdicts.reduce((best, next) => (rank[next.verdict.verdict] < rank[best.verdict.verdict] ? next : best))
