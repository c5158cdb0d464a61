/** One MCP exchange as the wire carried it: the request's headers and body, the answer's body. */
export interface WireExchange {
  readonly headers: Headers
  readonly request: any
  readonly response: any
}

/**
 * A `fetch` for an MCP client transport that records every exchange, so a test can assert what
 * went over the wire (the 2026-07-28 headers, `resultType`, an extension result the client
 * itself refuses to surface). Loopback only: it forwards to the global fetch unchanged.
 */
export const recordingFetch = () => {
  const exchanges: Array<WireExchange> = []
  const wireFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init)
    const text = await response.clone().text()
    let parsed: unknown = text
    try {
      parsed = text === "" ? undefined : JSON.parse(text)
    } catch {
      // An event stream or an error page: kept as text.
    }
    exchanges.push({
      headers: new Headers(init?.headers),
      request: typeof init?.body === "string" ? JSON.parse(init.body) : undefined,
      response: parsed
    })
    return response
  }
  return { fetch: wireFetch, exchanges }
}
