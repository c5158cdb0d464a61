import { type Html, html } from "./html.js"

export const STYLE_PATH = "/status/style.css"

/** Every page: one stylesheet from this service, no script, no font or image from elsewhere. */
export const layout = (title: string, body: Html): string =>
  html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Sextant</title>
<link rel="stylesheet" href="${STYLE_PATH}">
</head>
<body>
<header><a href="/status">Sextant status</a><nav><a href="/status#catalog">Catalog</a><a href="/status#facilitators">Facilitators</a><a href="/status#journal">Settlements</a><a href="/docs">API</a></nav></header>
<main>
${body}
</main>
</body>
</html>`.value

/**
 * The page may load only what this service serves, and nothing may frame it. Inline SVG needs no
 * source; there is no script to allow.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
