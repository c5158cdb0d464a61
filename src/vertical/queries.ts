import { Effect, Option } from "effect"
import type { StellarNetwork } from "../domain/stellar.js"
import { type AssetRef, formatAssetRef } from "./assetRef.js"
import { type ChangesAnswer, classicChanges, contractChanges, formatThreshold, largeThreshold } from "./changes.js"
import { type ComplianceAnswer, complianceClassic, complianceContract } from "./compliance.js"
import { type EligibilityAnswer, eligibilityClassic, eligibilityContract } from "./eligibility.js"
import { AssetNotDescribed, AssetNotFound, type UpstreamFailure } from "./errors.js"
import {
  type AssetIdentity,
  type ClassicIdentity,
  classicIdentity,
  instanceFacts,
  sacClassicAsset
} from "./identity.js"
import { type InspectAnswer, inspectClassic, inspectContract, supplyTotal } from "./inspect.js"
import { StellarData } from "./StellarData.js"
import type { ContractInstance, HorizonAccount, TomlLookup } from "./upstream.js"

/**
 * The four answers: fetch what each needs (in parallel where independent), then hand the
 * upstream data to the pure builders. Nothing here is charged for until the caller settles.
 */

export interface IntelSettings {
  readonly network: StellarNetwork
  readonly networkPassphrase: string
  readonly largeTransferShare: number
}

type Resolved =
  | {
      readonly kind: "classic"
      readonly identity: ClassicIdentity
      /** The asset's SAC instance: already known when the buyer named the SAC, else fetched on demand. */
      readonly sac: Effect.Effect<Option.Option<ContractInstance>, UpstreamFailure>
    }
  | { readonly kind: "contract"; readonly identity: AssetIdentity; readonly instance: ContractInstance }

export type QueryError = AssetNotFound | AssetNotDescribed | UpstreamFailure

const resolve = (ref: AssetRef, settings: IntelSettings): Effect.Effect<Resolved, QueryError, StellarData> =>
  Effect.gen(function* () {
    const data = yield* StellarData
    const input = formatAssetRef(ref)
    if (ref.kind === "classic") {
      const identity = classicIdentity(input, settings.network, "classic", ref, settings.networkPassphrase)
      return { kind: "classic", identity, sac: data.contractInstance(identity.contractId) }
    }
    const instance = yield* data.contractInstance(ref.contractId).pipe(
      Effect.flatMap(
        Option.match({
          onNone: () => new AssetNotFound({ message: `no contract ${ref.contractId} exists on ${settings.network}` }),
          onSome: Effect.succeed
        })
      )
    )
    const facts = instanceFacts(instance)
    if (instance.executable.type === "stellar_asset") {
      const asset = sacClassicAsset(ref.contractId, facts, settings.networkPassphrase)
      if (!asset) {
        return yield* new AssetNotDescribed({
          message:
            "this Stellar Asset Contract wraps native XLM (or does not name its asset), which has no issuer to describe"
        })
      }
      const identity = classicIdentity(
        input,
        settings.network,
        "stellar_asset_contract",
        asset,
        settings.networkPassphrase
      )
      return { kind: "classic", identity, sac: Effect.succeed(Option.some(instance)) }
    }
    return {
      kind: "contract",
      identity: {
        input,
        network: settings.network,
        type: "contract_token",
        code: facts.symbol,
        issuer: null,
        contractId: ref.contractId
      },
      instance
    }
  })

const requireIssuer = (identity: ClassicIdentity, network: StellarNetwork) =>
  Effect.flatMap(StellarData, (data) => data.account(identity.issuer)).pipe(
    Effect.flatMap(
      Option.match({
        onNone: () =>
          new AssetNotFound({
            message: `the issuer ${identity.issuer} of ${identity.code} does not exist on ${network}`
          }),
        onSome: (account: HorizonAccount) => Effect.succeed(account)
      })
    )
  )

const noHomeDomain: TomlLookup = { status: "skipped", reason: "the issuer sets no home domain" }

export const inspect = (
  ref: AssetRef,
  settings: IntelSettings
): Effect.Effect<InspectAnswer, QueryError, StellarData> =>
  Effect.gen(function* () {
    const data = yield* StellarData
    const resolved = yield* resolve(ref, settings)
    if (resolved.kind === "contract") return inspectContract(resolved.identity, resolved.instance)
    const { identity } = resolved
    const [issuer, stats, sac] = yield* Effect.all(
      [requireIssuer(identity, settings.network), data.assetStats(identity.code, identity.issuer), resolved.sac],
      { concurrency: "unbounded" }
    )
    const toml = issuer.home_domain ? yield* data.stellarToml(issuer.home_domain) : noHomeDomain
    return inspectClassic({ identity, issuer, stats: Option.getOrNull(stats), sac: Option.getOrNull(sac), toml })
  })

export const changes = (
  ref: AssetRef,
  settings: IntelSettings
): Effect.Effect<ChangesAnswer, QueryError, StellarData> =>
  Effect.gen(function* () {
    const data = yield* StellarData
    const resolved = yield* resolve(ref, settings)
    if (resolved.kind === "contract") {
      const { instance } = resolved
      const [window, modifiedAt] = yield* Effect.all(
        [
          data.tokenEvents(resolved.identity.contractId),
          instance.lastModifiedLedger === null
            ? Effect.succeed(Option.none<string>())
            : data.ledgerCloseTime(instance.lastModifiedLedger)
        ],
        { concurrency: "unbounded" }
      )
      return {
        asset: resolved.identity,
        source: {
          api: "soroban-rpc",
          description: `mint, burn, clawback, set_admin and set_authorized events in ledgers ${window.fromLedger} to ${window.toLedger}, and the contract instance's last modification`,
          largeFrom: null
        },
        changes: contractChanges(window, instance, Option.getOrNull(modifiedAt), instanceFacts(instance).decimals)
      }
    }
    const { identity } = resolved
    const [, stats, operations] = yield* Effect.all(
      [
        requireIssuer(identity, settings.network),
        data.assetStats(identity.code, identity.issuer),
        data.operations(identity.issuer)
      ],
      { concurrency: "unbounded" }
    )
    const threshold = largeThreshold(supplyTotal(Option.getOrNull(stats)), settings.largeTransferShare)
    return {
      asset: identity,
      source: {
        api: "horizon",
        description: `the issuer's ${operations.length} most recent successful operations`,
        largeFrom: formatThreshold(threshold)
      },
      changes: classicChanges(identity, operations, threshold)
    }
  })

export const compliance = (
  ref: AssetRef,
  settings: IntelSettings
): Effect.Effect<ComplianceAnswer, QueryError, StellarData> =>
  Effect.gen(function* () {
    const resolved = yield* resolve(ref, settings)
    if (resolved.kind === "contract") return complianceContract(resolved.identity, instanceFacts(resolved.instance))
    const [issuer, sac] = yield* Effect.all([requireIssuer(resolved.identity, settings.network), resolved.sac], {
      concurrency: "unbounded"
    })
    return complianceClassic(resolved.identity, issuer, Option.getOrNull(Option.map(sac, instanceFacts)))
  })

export const eligibility = (
  ref: AssetRef,
  wallet: string,
  settings: IntelSettings
): Effect.Effect<EligibilityAnswer, QueryError, StellarData> =>
  Effect.gen(function* () {
    const data = yield* StellarData
    const resolved = yield* resolve(ref, settings)
    if (resolved.kind === "contract") {
      const [account, balance] = yield* Effect.all(
        [data.account(wallet), data.tokenBalance(resolved.identity.contractId, wallet)],
        { concurrency: "unbounded" }
      )
      return eligibilityContract(
        resolved.identity,
        wallet,
        Option.getOrNull(account),
        Option.getOrNull(balance),
        instanceFacts(resolved.instance).decimals
      )
    }
    const [, account] = yield* Effect.all([requireIssuer(resolved.identity, settings.network), data.account(wallet)], {
      concurrency: "unbounded"
    })
    return eligibilityClassic(resolved.identity, wallet, Option.getOrNull(account))
  })
