/** Request bodies are bounded in size and in nesting, before any handler reads them. */
export const MAX_BODY_BYTES = 1024 * 1024

/**
 * No request this API takes nests deeper than a handful of levels; a body nested thousands deep
 * would only exhaust the stack of whatever walks it recursively (schema decoding, canonical JSON).
 */
export const MAX_JSON_DEPTH = 64

/** The deepest nesting of objects and arrays in a JSON text, counted without parsing it. */
export const jsonDepth = (text: string): number => {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92 /* \ */) i++
      else if (c === 34 /* " */) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 /* { */ || c === 91 /* [ */) deepest = Math.max(deepest, ++depth)
    else if (c === 125 /* } */ || c === 93 /* ] */) depth--
  }
  return deepest
}

/**
 * The request line and headers together are limited to 16 KiB: above it, 431 HEADERS_TOO_LARGE as
 * `{error, message}`. Bun's own parser answers an empty 431 above its cap before the service sees
 * the request, so the server layer (http/server.ts) raises Bun's cap to `PARSER_HEADER_BYTES`:
 * between the two the service answers; beyond Bun's cap it cannot.
 */
export const MAX_HEADER_BYTES = 16 * 1024
export const PARSER_HEADER_BYTES = 64 * 1024

/** The bytes of the request line and headers as they came (`name: value\r\n` each), near enough. */
export const headerBytes = (method: string, url: string, headers: Readonly<Record<string, string | undefined>>) =>
  Object.entries(headers).reduce(
    (sum, [name, value]) => sum + name.length + (value?.length ?? 0) + 4,
    method.length + url.length + " HTTP/1.1\r\n".length + 2
  )

/**
 * Whether a JSON text has an object member named `__proto__`. JSON.parse keeps such a member as
 * an own property, but whatever copies it by assignment (schema decoding of a body whose unknown
 * fields are kept, a spread into a new object) makes it the copy's prototype. A text can only hold
 * one spelled out or through a `\u` escape, so most bodies are cleared by two substring searches.
 */
export const hasProtoMember = (text: string): boolean => {
  if (!text.includes("__proto__") && !text.includes("\\u")) return false
  let found = false
  try {
    JSON.parse(text, (key, value) => {
      if (key === "__proto__") found = true
      return value
    })
  } catch {
    // Not JSON: the body reader refuses it as such.
  }
  return found
}
