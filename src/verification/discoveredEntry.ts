import { createHash } from "node:crypto"
import { Schema } from "effect"
import type { Config } from "../config.js"
import { ResourceId } from "../domain/ids.js"
import type { McpTool } from "../domain/mcp.js"
import { type CatalogEntry, type HttpMethod, ResourcePaymentOption } from "../domain/resources.js"
import { serviceMetadataOf } from "../domain/serviceMetadata.js"
import { baseUnitsToUsd } from "../domain/stellar.js"
import { isAcceptable } from "../x402/challenge.js"
import type { Observed } from "./observe.js"

const isPaymentOption = Schema.is(ResourcePaymentOption)

/**
 * The catalog entry for a URL found by `/v1/validate`: its payment options are the acceptable
 * ones its own challenge offered, so later probes judge it against what it first asked.
 */
export const discoveredEntry = (
  id: ResourceId,
  url: URL,
  method: HttpMethod,
  observed: Observed,
  config: Config,
  mcp?: McpTool
): CatalogEntry => {
  const deployment = { network: config.network, assetContract: config.asset.assetContract }
  const options = observed.options
    .filter((o) => isAcceptable(o, deployment))
    .map((o) => {
      const usd = baseUnitsToUsd(o.amount, config.asset.decimals)
      return {
        network: o.network,
        scheme: o.scheme,
        asset: o.asset,
        amount: o.amount,
        amountUsd: usd,
        ...(o.maxAmount !== null ? { maxAmount: o.maxAmount, maxAmountUsd: usd } : {}),
        payTo: o.payTo
      }
    })
    .filter(isPaymentOption)
  const challenge = observed.challenge
  const description = challenge?.x402Version === 2 ? challenge.resource.description : undefined
  // The seller's own 402 names its service (2.27 `resource.serviceName`, `tags`, `iconUrl`).
  const service = challenge?.x402Version === 2 ? serviceMetadataOf({ ...challenge.resource, url: url.href }) : {}
  return {
    resource: {
      id,
      type: mcp === undefined ? "http" : "mcp",
      name: mcp?.toolName ?? `${url.host}${url.pathname}`,
      description: description || `Found by /v1/validate at ${url.href}`,
      url: url.href,
      method,
      ...(mcp !== undefined ? { mcp } : {}),
      capabilities: [],
      ...service
    },
    provider: { id: `host:${url.host}`, name: url.host, url: url.origin },
    paymentOptions: options
  }
}

/** Derived from the URL, so two concurrent first validations of one URL write the same row. */
export const discoveredId = (url: URL) =>
  ResourceId.make(`discovered-${createHash("sha256").update(url.href).digest("hex").slice(0, 16)}`)

/** One server's tools share its URL: an MCP tool's id hashes the URL and the tool. */
export const discoveredToolId = (url: URL, toolName: string) =>
  discoveredId(new URL(`#${encodeURIComponent(toolName)}`, url))

/** The id a URL (or one tool of an MCP server at it) gets when the catalog adopts it. */
export const discoveredIdOf = (url: URL, mcp: McpTool | undefined) =>
  mcp === undefined ? discoveredId(url) : discoveredToolId(url, mcp.toolName)
