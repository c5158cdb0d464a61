import type { AssetIdentity, InstanceFacts } from "./identity.js"
import type { HorizonAccount } from "./upstream.js"

export type RestrictionName = "authorization_required" | "clawback_enabled" | "freeze_capability" | "contract_admin"

export interface Restriction {
  readonly name: RestrictionName
  /** null when the ledger does not show it either way (a custom contract enforces its own rules). */
  readonly present: boolean | null
  readonly detail: string
}

export interface ComplianceAnswer {
  readonly asset: AssetIdentity
  readonly restrictions: ReadonlyArray<Restriction>
  /** The issuer set auth_immutable: none of its flags can change again. */
  readonly flagsImmutable: boolean | null
  readonly admin: string | null
  readonly statement: string
}

export const NO_LEGAL_CONCLUSION =
  "This lists technical controls observable on the Stellar ledger. It is not legal, regulatory or compliance advice, and no conclusion about the legal status of the asset, its issuer or any holder is drawn."

const adminRestriction = (facts: InstanceFacts | null, deployedNote: string): Restriction =>
  facts === null
    ? { name: "contract_admin", present: false, detail: deployedNote }
    : facts.admin === null
      ? {
          name: "contract_admin",
          present: null,
          detail: "the contract instance names no admin in a storage layout this service reads"
        }
      : {
          name: "contract_admin",
          present: true,
          detail: `the contract names ${facts.admin} as admin; it can mint and change authorisations through the contract`
        }

/** Restrictions of an issued asset: the issuer's account flags, and the admin of its SAC if deployed. */
export const complianceClassic = (
  identity: AssetIdentity,
  issuer: HorizonAccount,
  sacFacts: InstanceFacts | null
): ComplianceAnswer => ({
  asset: identity,
  restrictions: [
    {
      name: "authorization_required",
      present: issuer.flags.auth_required,
      detail: issuer.flags.auth_required
        ? "the issuer must authorise each trustline before it can hold the asset"
        : "any account can open a trustline and hold the asset without the issuer's approval"
    },
    {
      name: "clawback_enabled",
      present: issuer.flags.auth_clawback_enabled,
      detail: issuer.flags.auth_clawback_enabled
        ? "trustlines opened while this flag is set allow the issuer to claw balances back"
        : "the issuer cannot claw back balances of trustlines opened now"
    },
    {
      name: "freeze_capability",
      present: issuer.flags.auth_revocable,
      detail: issuer.flags.auth_revocable
        ? "the issuer can revoke a trustline's authorisation, freezing the holder's balance"
        : "the issuer cannot revoke authorisation once granted"
    },
    adminRestriction(sacFacts, "no Stellar Asset Contract is deployed for this asset, so there is no contract admin")
  ],
  flagsImmutable: issuer.flags.auth_immutable,
  admin: sacFacts?.admin ?? null,
  statement: NO_LEGAL_CONCLUSION
})

const enforcedByCode = (name: Exclude<RestrictionName, "contract_admin">): Restriction => ({
  name,
  present: null,
  detail: "a custom contract token enforces this in its own code, which the ledger does not expose as a flag"
})

export const complianceContract = (identity: AssetIdentity, facts: InstanceFacts): ComplianceAnswer => ({
  asset: identity,
  restrictions: [
    enforcedByCode("authorization_required"),
    enforcedByCode("clawback_enabled"),
    enforcedByCode("freeze_capability"),
    adminRestriction(facts, "")
  ],
  flagsImmutable: null,
  admin: facts.admin,
  statement: NO_LEGAL_CONCLUSION
})
