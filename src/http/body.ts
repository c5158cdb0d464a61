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
