import { Effect } from "effect"
import type { BuyAttempt } from "../domain/buy.js"
import type { McpKind } from "../domain/mcp.js"
import type { AgentPolicy } from "../domain/policy.js"
import type { ResourceInfo } from "../domain/resources.js"
import type { RankedCandidate } from "../domain/routes.js"
import type { BuyerSettings } from "./Buyer.js"
import { candidateRefusal, priceCeiling } from "./candidate.js"
import { describeFailure } from "./errors.js"
import { type Placement, placeInput, toolArguments } from "./input.js"
import type { SextantClientShape } from "./SextantClient.js"

export type Resource = typeof ResourceInfo.Type

/** Where one candidate is bought: the resource as the service describes it and the input placed for its method. */
export interface Plan {
  readonly candidate: RankedCandidate
  readonly rank: number
  readonly resource: Resource
  readonly placement: Placement
  /** For an `mcp` resource: what is read at `placement.url` (a tool, a resource or a prompt, by name) and its arguments. */
  readonly tool?: {
    readonly kind: McpKind
    readonly toolName: string
    readonly arguments: Readonly<Record<string, unknown>>
  }
  /** The most the buyer signs for it (base units). */
  readonly ceiling: bigint
}

export const attemptOf = (
  candidate: RankedCandidate,
  rank: number,
  outcome: BuyAttempt["outcome"],
  reason: string,
  more: Partial<BuyAttempt> = {}
): BuyAttempt => ({
  rank,
  resourceId: candidate.resourceId,
  providerId: candidate.providerId,
  outcome,
  reason,
  amount: null,
  httpStatus: null,
  transactionHash: null,
  ...more
})

/**
 * Steps 2.1 and 2.2 of a purchase (README, "Buying"): the buyer's own checks of the candidate,
 * then the resource's URL and method from the service and the input placed for that method. A
 * string is why the candidate is not tried.
 */
export const planFor = (
  client: SextantClientShape,
  settings: BuyerSettings,
  candidate: RankedCandidate,
  rank: number,
  policy: AgentPolicy,
  input: unknown
) =>
  Effect.gen(function* () {
    const refusal = candidateRefusal(candidate, policy, settings.deployment)
    if (refusal !== null) return attemptOf(candidate, rank, "refused", refusal)
    const detail = yield* Effect.either(client.resources.get({ path: { id: candidate.resourceId } }))
    if (detail._tag === "Left")
      return attemptOf(
        candidate,
        rank,
        "failed",
        `the service could not describe the resource: ${describeFailure(detail.left)}`
      )
    const resource = detail.right.resource
    const ceiling = priceCeiling(candidate, policy, settings.decimals)
    if (resource.mcp !== undefined) {
      const args = toolArguments(input)
      if (args._tag === "Left") return attemptOf(candidate, rank, "refused", args.left)
      return {
        candidate,
        rank,
        resource,
        placement: { url: resource.url },
        tool: { kind: resource.mcp.kind, toolName: resource.mcp.toolName, arguments: args.right },
        ceiling
      } satisfies Plan
    }
    const placement = placeInput(resource.url, resource.method, input)
    if (placement._tag === "Left") return attemptOf(candidate, rank, "refused", placement.left)
    return { candidate, rank, resource, placement: placement.right, ceiling } satisfies Plan
  })
