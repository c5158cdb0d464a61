import { Context, type Effect } from "effect"
import type { RouteDecision, RouteRequest } from "../domain/routes.js"

/** Chooses a provider for a capability under a buyer policy; the same inputs give the same answer. */
export class Router extends Context.Tag("sextant/Router")<
  Router,
  { readonly route: (request: RouteRequest) => Effect.Effect<RouteDecision> }
>() {}
