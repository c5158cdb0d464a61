import { Schema } from "effect"
import { ResourceId } from "./ids.js"
import { Listing, ServiceStatus, VerificationLevel } from "./resources.js"

/**
 * Operator curation (docs/decisions.md, Operator curation): what an operator key may change about
 * a catalog entry, each change stored with its actor (the API key's principal) and reason.
 */
export const CurationActionKind = Schema.Literal("quarantine", "unquarantine", "list", "unlist", "delete").annotations({
  identifier: "CurationActionKind"
})
export type CurationActionKind = typeof CurationActionKind.Type

/** An operator's quarantine in force: it holds whatever the probes observe, until an operator lifts it. */
export const OperatorQuarantine = Schema.Struct({
  actor: Schema.String,
  reason: Schema.String,
  at: Schema.String
}).annotations({ identifier: "OperatorQuarantine" })
export type OperatorQuarantine = typeof OperatorQuarantine.Type

/** The newest change of a resource's listing: by the catalog file, a source, or an operator. */
export const ListingChangeRecord = Schema.Struct({
  listed: Schema.Boolean,
  actor: Schema.String,
  reason: Schema.String,
  at: Schema.String
}).annotations({ identifier: "ListingChangeRecord" })
export type ListingChangeRecord = typeof ListingChangeRecord.Type

/** Who curated a resource last, shown with it by `GET /v1/resources/{id}`. */
export const Curation = Schema.Struct({
  quarantine: Schema.NullOr(OperatorQuarantine),
  lastListingChange: Schema.NullOr(ListingChangeRecord)
}).annotations({ identifier: "Curation" })
export type Curation = typeof Curation.Type

/** One stored operator action. */
export const CurationAction = Schema.Struct({
  resourceId: ResourceId,
  action: CurationActionKind,
  actor: Schema.String,
  reason: Schema.String,
  at: Schema.String
}).annotations({ identifier: "CurationAction" })
export type CurationAction = typeof CurationAction.Type

/** The answer of an operator endpoint: the action stored, and the resource as it stands after it (null once deleted). */
export const CurationResult = Schema.Struct({
  action: CurationAction,
  resource: Schema.NullOr(
    Schema.Struct({
      status: ServiceStatus,
      verificationLevel: VerificationLevel,
      listing: Listing,
      curation: Curation
    })
  )
}).annotations({ identifier: "CurationResult" })
export type CurationResult = typeof CurationResult.Type

const Reason = Schema.String.pipe(
  Schema.trimmed({ message: () => "reason must not start or end with spaces" }),
  Schema.minLength(1, { message: () => "reason must not be empty" }),
  Schema.maxLength(500, { message: () => "reason must be at most 500 characters" })
)

/** Quarantine and unlist say why: a buyer who finds the resource withdrawn reads the reason. */
export const ReasonRequired = Schema.Struct({ reason: Reason }).annotations({ identifier: "CurationReason" })
/** Listing again needs no reason; one is stored when given. */
export const ReasonOptional = Schema.Struct({ reason: Schema.optional(Reason) }).annotations({
  identifier: "CurationOptionalReason"
})
/** DELETE endpoints carry no body: the reason, optional, is a query parameter. */
export const ReasonQuery = Schema.Struct({ reason: Schema.optional(Reason) })
