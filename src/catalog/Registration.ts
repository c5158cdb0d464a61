import { Context, Effect, Layer, Option, Predicate } from "effect"
import { AppConfig } from "../config.js"
import { InvalidRequest, TargetRefused } from "../domain/errors.js"
import { PrincipalId, type ResourceId } from "../domain/ids.js"
import type { RegisteredRoute, RegistrationRequest, RegistrationResponse } from "../domain/registration.js"
import type { HttpMethod } from "../domain/resources.js"
import { checkUrl } from "../outbound/outboundGuard.js"
import { CatalogWritesRepo } from "../store/CatalogWritesRepo.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { discoveredEntry, discoveredIdOf } from "../verification/discoveredEntry.js"
import { Prober } from "../verification/Prober.js"
import { admitted } from "./admitEntries.js"
import { type FoundRoute, OPENAPI_PATHS, PROBED_METHODS } from "./discoveryDocuments.js"
import { quotaKeys } from "./ingestionQuota.js"
import { registrationOutcome } from "./registrationOutcome.js"
import { discoverRoutes, mcpToolRoutes } from "./registrationRoutes.js"

/**
 * Routes probed per registration at most: one request should not turn the service into a crawler.
 * With at most three discovery documents read, a registration sends at most
 * MAX_REGISTRATION_REQUESTS requests (each may follow up to 5 redirects, each guarded).
 */
export const MAX_ROUTES = 20
export const MAX_REGISTRATION_REQUESTS = OPENAPI_PATHS.length + 1 + MAX_ROUTES

export interface RegistrationShape {
  /** Finds a seller's routes from its origin and lists those whose 402 challenge checks out. */
  readonly register: (
    request: RegistrationRequest,
    principal: PrincipalId | null
  ) => Effect.Effect<RegistrationResponse, InvalidRequest | TargetRefused>
}

/**
 * Registration by origin or URL (`POST /v1/resources/register`): reads the origin's discovery
 * documents, probes every route with the Prober (and its outbound guard), and lists exactly the
 * routes that answer a valid 402 for this deployment's network and asset.
 */
export class Registration extends Context.Tag("sextant/Registration")<Registration, RegistrationShape>() {
  static readonly Live = Layer.effect(
    Registration,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const prober = yield* Prober
  const resources = yield* ResourceReadsRepo
  const catalogWrites = yield* CatalogWritesRepo
  const deployment = { network: config.network, assetContract: config.asset.assetContract }

  const answer = (
    route: FoundRoute,
    outcome: RegisteredRoute["outcome"],
    resourceId: ResourceId | null,
    detail: string | null
  ): RegisteredRoute => ({
    url: route.url,
    method: route.method,
    foundIn: route.foundIn,
    ...(route.mcp !== undefined ? { toolName: route.mcp.toolName } : {}),
    outcome,
    resourceId,
    detail
  })

  /**
   * One route: a URL the catalog has is left as it is, unprobed (the schedule probes it with its
   * catalog method; a caller's probe is no evidence about it); a new URL (or one only validated) is
   * probed first and stored (listed, source "registration") only when it answered a valid 402 and
   * fits the ingestion quotas.
   */
  const registerRoute = (route: FoundRoute, actor: PrincipalId) =>
    Effect.gen(function* () {
      if (route.skip !== null) return answer(route, "skipped", null, route.skip)
      const url = new URL(route.url)
      const known = yield* resources.findByUrl(route.url, route.mcp?.toolName, route.mcp?.kind)
      // A URL only ever probed through /v1/validate is not in the catalog yet: registration may take it up.
      if (Option.isSome(known) && known.value.listing.source !== "validate") {
        return answer(
          route,
          "already-cataloged",
          known.value.resource.id,
          `in the catalog from ${known.value.listing.source}`
        )
      }
      const observed = yield* prober.observeNewUrl(url, route.method, route.mcp)
      const { outcome, detail } = observed.observation
      const verdict = registrationOutcome(outcome, observed.options, deployment)
      if (verdict !== "listed") return answer(route, verdict, null, detail)
      const id = discoveredIdOf(url, route.mcp)
      const entry = discoveredEntry(id, url, route.method, observed, config, route.mcp)
      const { refused } = yield* admitted(catalogWrites, config.ingestion, "registration", [
        { item: entry, keys: quotaKeys(entry, actor) }
      ])
      if (refused[0] !== undefined) return answer(route, "refused", null, `quota: ${refused[0].reason}`)
      const result = yield* prober.adopt(
        url,
        route.method,
        observed,
        "registration",
        true,
        {
          actor,
          reason: `registered through /v1/resources/register (found in ${route.foundIn}); answered a valid 402 on ${config.network}`
        },
        route.mcp
      )
      return answer(route, "listed", result.resourceId, null)
    }).pipe(Effect.catchTag("OutboundTargetRefused", (e) => Effect.succeed(answer(route, "refused", null, e.reason))))

  /** The origin of the request, or a refusal; the guard's checks that need no network run here. */
  const originOf = (raw: string) => {
    const checked = checkUrl(raw, config.probes)
    if (Predicate.isTagged(checked, "OutboundTargetRefused"))
      return Effect.fail(new TargetRefused({ message: `target refused: ${checked.reason}` }))
    return Effect.succeed(checked)
  }

  const register = (request: RegistrationRequest, principal: PrincipalId | null) =>
    Effect.gen(function* () {
      const actor = principal ?? PrincipalId.make("anonymous")
      if ((request.origin === undefined) === (request.url === undefined)) {
        return yield* Effect.fail(
          new InvalidRequest({
            message: "pass either origin (to read its discovery documents) or url (one route), not both"
          })
        )
      }
      if (request.method !== undefined && !PROBED_METHODS.has(request.method)) {
        return yield* Effect.fail(
          new InvalidRequest({
            message: `method: registration probes only GET, HEAD and POST routes, not ${request.method}`
          })
        )
      }
      if (request.type === "mcp" && (request.url === undefined || request.method !== undefined)) {
        return yield* Effect.fail(
          new InvalidRequest({
            message: "type mcp: pass the server's endpoint as url, without method (tools are called with tools/call)"
          })
        )
      }
      if (request.origin !== undefined && request.method !== undefined) {
        return yield* Effect.fail(
          new InvalidRequest({ message: "method: only with url; an origin's documents name each route's method" })
        )
      }
      const target = yield* originOf(request.origin ?? request.url!)
      const origin = target.origin
      const found =
        request.type === "mcp"
          ? yield* mcpToolRoutes(target.href, config.probes)
          : request.url !== undefined
            ? {
                documents: [],
                routes: [
                  {
                    url: target.href,
                    method: request.method ?? ("GET" as HttpMethod),
                    foundIn: "request" as const,
                    description: null,
                    skip: null
                  }
                ]
              }
            : yield* discoverRoutes(origin, config.probes)
      const capped = found.routes.map((route, i) =>
        i < MAX_ROUTES || route.skip !== null
          ? route
          : { ...route, skip: `over the ${MAX_ROUTES} routes probed per registration` }
      )
      const routes = yield* Effect.forEach(capped, (route) => registerRoute(route, actor), {
        concurrency: config.probes.concurrency
      })
      return {
        origin,
        documents: found.documents,
        routes,
        listed: routes.filter((r) => r.outcome === "listed").length
      } satisfies RegistrationResponse
    }).pipe(Effect.withSpan("Registration.register"))

  return { register } satisfies RegistrationShape
})
