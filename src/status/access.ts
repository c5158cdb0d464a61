/** Who reads the page: no key, a key that matched none, or a configured principal's role. */
export type Reader =
  | { readonly _tag: "Anonymous" }
  | { readonly _tag: "Invalid" }
  | { readonly _tag: "Key"; readonly role: "operator" | "buyer" }

export interface SectionAccess {
  readonly facilitators: string | null
  readonly journal: string | null
}

/**
 * What the page shows to whom; null means shown, a string says why not. With no API keys
 * configured (open mode) everything is shown, as the JSON API shows it. With keys, the catalog and
 * resource pages stay public like discovery; facilitators need a key, as `/x402/facilitators`
 * does; the journal needs an operator key, since it names principals and their payments.
 */
export const sectionAccess = (keysConfigured: boolean, reader: Reader): SectionAccess => {
  if (!keysConfigured) return { facilitators: null, journal: null }
  const askForKey = "Send Authorization: Bearer <api key> to see this section."
  if (reader._tag !== "Key") {
    const why = reader._tag === "Invalid" ? "The API key sent matches no configured key." : "API keys are configured."
    return { facilitators: `${why} ${askForKey}`, journal: `${why} The journal needs an operator key.` }
  }
  return {
    facilitators: null,
    journal: reader.role === "operator" ? null : "The settlement journal needs an API key whose role is operator."
  }
}
