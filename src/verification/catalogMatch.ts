import { Schema } from "effect"
import type { ResourcePaymentOption } from "../domain/resources.js"
import { BaseUnits } from "../domain/stellar.js"
import { type ChallengeOption, type Deployment, isAcceptable } from "../x402/challenge.js"

/** What a price is compared on: the ceiling for `upto`, the fixed amount otherwise. */
export const advertisedPrice = (option: ResourcePaymentOption) =>
  option.scheme === "upto" ? (option.maxAmount ?? option.amount) : option.amount
const askedPrice = (option: Pick<ChallengeOption, "amount" | "maxAmount">) => option.maxAmount ?? option.amount

const isBaseUnits = Schema.is(BaseUnits)

const sameKind = (a: ResourcePaymentOption, c: Pick<ChallengeOption, "network" | "scheme">) =>
  a.network === c.network && a.scheme === c.scheme

const samePayment = (a: ResourcePaymentOption, c: Pick<ChallengeOption, "network" | "scheme" | "asset" | "payTo">) =>
  sameKind(a, c) && a.asset === c.asset && a.payTo === c.payTo

/**
 * The option an observation records: one the catalog advertises, else one this deployment
 * accepts, else the first offered; null when the challenge offered nothing.
 */
export const representativeOption = (
  options: ReadonlyArray<ChallengeOption>,
  advertised: ReadonlyArray<ResourcePaymentOption>,
  deployment: Deployment
): ChallengeOption | null => {
  const acceptable = options.filter((o) => isAcceptable(o, deployment))
  return acceptable.find((o) => advertised.some((a) => samePayment(a, o))) ?? acceptable[0] ?? options[0] ?? null
}

// Tolerance is compared in millionths so base-unit amounts stay exact integers.
const SCALE = 1_000_000n
/** `asked` is above `advertised` by more than `tolerance` (a share): the automatic quarantine's price rule, also preflight's. */
export const exceeds = (asked: string, advertised: string, tolerance: number) =>
  BigInt(asked) * SCALE > BigInt(advertised) * (SCALE + BigInt(Math.round(tolerance * 1_000_000)))

/**
 * Why a challenge contradicts the catalog, or null. Every offered option whose network and scheme
 * the catalog lists must pay a listed payee in a listed asset at no more than the advertised price
 * plus the tolerance. Options of kinds the catalog does not list are not judged here.
 */
export const contradiction = (
  options: ReadonlyArray<ChallengeOption>,
  advertised: ReadonlyArray<ResourcePaymentOption>,
  tolerance: number
): string | null => {
  for (const offered of options) {
    const listed = advertised.filter((a) => sameKind(a, offered))
    if (listed.length === 0) continue
    if (!listed.some((a) => a.payTo === offered.payTo)) {
      return `payTo changed: the catalog lists ${[...new Set(listed.map((a) => a.payTo))].join(", ")} but the challenge pays ${offered.payTo}`
    }
    if (!listed.some((a) => a.asset === offered.asset)) {
      return `asset changed: the catalog lists ${[...new Set(listed.map((a) => a.asset))].join(", ")} but the challenge asks for ${offered.asset}`
    }
    const price = askedPrice(offered)
    const matching = listed.filter((a) => samePayment(a, offered))
    if (
      isBaseUnits(price) &&
      matching.length > 0 &&
      matching.every((a) => exceeds(price, advertisedPrice(a), tolerance))
    ) {
      const cheapest = matching.map(advertisedPrice).sort((x, y) => (BigInt(x) < BigInt(y) ? -1 : 1))[0]
      return `price above the advertised ${cheapest} base units by more than ${tolerance * 100}%: the challenge asks ${price}`
    }
  }
  return null
}

/** Price consistency: the recorded option asks exactly what the catalog advertises for that payment. */
export const matchesAdvertisedPrice = (
  recorded: Pick<ChallengeOption, "network" | "scheme" | "asset" | "payTo" | "amount" | "maxAmount">,
  advertised: ReadonlyArray<ResourcePaymentOption>
): boolean => advertised.some((a) => samePayment(a, recorded) && advertisedPrice(a) === askedPrice(recorded))
