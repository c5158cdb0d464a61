import type { ProbeOutcome } from "../domain/observations.js"
import type { RegistrationOutcome } from "../domain/registration.js"
import type { ChallengeOption, Deployment } from "../x402/challenge.js"

/**
 * A probe's outcome as registration reports it. A challenge without an acceptable option is told
 * apart by what it got wrong: no option on this network, none in this asset, or (on both) an
 * unknown scheme or amount. No I/O.
 */
export const registrationOutcome = (
  outcome: ProbeOutcome,
  options: ReadonlyArray<ChallengeOption>,
  deployment: Deployment
): RegistrationOutcome => {
  switch (outcome) {
    case "healthy":
      return "listed"
    case "http_status":
    case "executed_unpaid":
      return "not-402"
    case "no_challenge":
    case "malformed_challenge":
      return "invalid-challenge"
    case "no_acceptable_option": {
      const onNetwork = options.filter((o) => o.network === deployment.network)
      if (onNetwork.length === 0) return "wrong-network"
      // Right network and asset but still unacceptable: an unknown scheme or a malformed amount.
      return onNetwork.some((o) => o.asset === deployment.assetContract) ? "invalid-challenge" : "wrong-asset"
    }
    case "unreachable":
    case "timeout":
      return "unreachable"
    case "refused_target":
      return "refused"
  }
}
