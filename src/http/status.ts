import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Redacted } from "effect"
import { AppConfig } from "../config.js"
import { ApiKeyAuth } from "../contract/auth.js"
import { ResourceId } from "../domain/ids.js"
import { type Reader, sectionAccess } from "../status/access.js"
import { html } from "../status/html.js"
import { CONTENT_SECURITY_POLICY, layout, STYLE_PATH } from "../status/layout.js"
import { overviewPage } from "../status/overview.js"
import { resourcePage } from "../status/resourcePage.js"
import { pageRefusal, parseCatalogQuery, StatusReader } from "../status/StatusReader.js"
import { STYLESHEET } from "../status/style.js"
import { ApiKeyAuthLive } from "./authLive.js"

/** The status pages' paths, for route-template labels and span names. */
export const STATUS_ROUTES = ["/", "/status", STYLE_PATH, "/status/resources/:id"] as const

const HEADERS = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  // The journal section depends on the Authorization header: no shared cache may keep a page.
  "cache-control": "no-store",
  vary: "Authorization"
}

const page = (body: string, status = 200) =>
  HttpServerResponse.text(body, { status, contentType: "text/html; charset=utf-8", headers: HEADERS })

/**
 * The status pages (HTML, so not part of the HttpApi and its OpenAPI document): raw routes on the
 * API's router. The catalog and resource pages are public like discovery; the facilitator and
 * journal sections follow `sectionAccess`, with the same key check as the API.
 */
export const StatusRoutesLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const reader = yield* StatusReader
    const auth = yield* ApiKeyAuth
    const config = yield* AppConfig
    const keysConfigured = config.apiKeys.length > 0

    const readerOf = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const token = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "")?.[1]
      if (!keysConfigured || token === undefined) return { _tag: "Anonymous" } as Reader
      return yield* auth.bearer(Redacted.make(token)).pipe(
        Effect.map((principal): Reader => ({ _tag: "Key", role: principal.role })),
        Effect.orElseSucceed((): Reader => ({ _tag: "Invalid" }))
      )
    })

    const overview = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const params = new URL(request.url, "http://status.invalid").searchParams
      const refused = pageRefusal(params)
      if (refused !== null)
        return page(
          layout(
            "Bad request",
            html`<h1>Bad request</h1><p>${refused}</p><p><a href="/status">Back to the status page</a></p>`
          ),
          400
        )
      const query = parseCatalogQuery(params)
      const access = sectionAccess(keysConfigured, yield* readerOf)
      const catalog = yield* reader.catalog(query)
      const facilitators = access.facilitators === null ? yield* reader.facilitators : { hidden: access.facilitators }
      const journal = access.journal === null ? yield* reader.journal : { hidden: access.journal }
      return page(overviewPage(catalog, facilitators, journal, config.asset.decimals))
    })

    const resource = Effect.gen(function* () {
      const { id } = yield* HttpRouter.params
      return page(resourcePage(yield* reader.resource(ResourceId.make(id ?? ""))))
    }).pipe(
      Effect.catchTag("NotFound", (e) =>
        Effect.succeed(
          page(
            layout(
              "Not found",
              html`<h1>Not found</h1><p>${e.message}</p><p><a href="/status">Back to the status page</a></p>`
            ),
            404
          )
        )
      )
    )

    yield* router.get("/", HttpServerResponse.redirect("/status", { status: 302 }))
    yield* router.get("/status", overview)
    yield* router.get(
      STYLE_PATH,
      HttpServerResponse.text(STYLESHEET, {
        contentType: "text/css; charset=utf-8",
        headers: { "cache-control": "max-age=300" }
      })
    )
    yield* router.get("/status/resources/:id", resource)
  })
).pipe(Layer.provide(ApiKeyAuthLive))
