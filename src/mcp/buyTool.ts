import { Effect, Layer, ManagedRuntime, Schema } from "effect"
import { Buyer, BuyerLive } from "../client/Buyer.js"
import { attemptsOf, type BuyError, buyErrorCode, buyErrorMessage } from "../client/errors.js"
import { SextantClient, type WebHandler } from "../client/SextantClient.js"
import type { Config } from "../config.js"
import { BuyRequest, BuyResult } from "../domain/buy.js"
import { type Tool, ToolFailure } from "./tools.js"

export interface BuyToolOptions {
  /** The buyer key file; the tool exists only when the server is started with one. */
  readonly keyFile: string
  /** What this MCP session (this process) may spend, on top of the key's spend window. */
  readonly sessionCapUsd: number
}

/**
 * The `buy_resource` tool of an MCP server started with a buyer key: the same purchase as
 * `sextant buy`, routed and receipted by the handlers this MCP server already serves in-process
 * (`handle`), paid with the buyer key under the key's spend window and a per-session cap. The key
 * and the spend ledger are opened now, so a bad key file stops the server at start, not at the
 * first purchase. `dispose` closes the spend ledger.
 */
export const makeBuyTool = async (config: Config, handle: WebHandler, options: BuyToolOptions) => {
  const runtime = ManagedRuntime.make(
    BuyerLive(config, { keyFile: options.keyFile, sessionCapUsd: options.sessionCapUsd }).pipe(
      Layer.provide(SextantClient.inProcess(handle))
    )
  )
  await runtime.runPromise(Effect.void)
  const tool: Tool<BuyRequest, BuyResult> = {
    name: "buy_resource",
    description:
      "Buy one call of a capability with this server's buyer key (POST /v1/routes, then x402 on Stellar, then POST /v1/receipts): " +
      "the route's selection and fallbacks are tried in order, each 402 re-checked against the routed price and payee and the policy; " +
      "no two providers are paid and a payment whose outcome is unknown is never retried. `input` is the resource's JSON body " +
      "(POST), query parameters (GET) or an MCP tool's arguments; `maxUsd` caps the price of this call. Answers the data, the signed receipt and every attempt. " +
      `This session may spend at most ${options.sessionCapUsd} USD.`,
    input: BuyRequest,
    output: BuyResult,
    run: (request) =>
      runtime
        .runPromise(
          Effect.flatMap(Buyer, (buyer) => buyer.buy(request)).pipe(
            Effect.map(Schema.encodeSync(BuyResult)),
            Effect.catchAll((error: BuyError) =>
              Effect.fail(
                new ToolFailure({
                  message: `${buyErrorCode(error)}: ${buyErrorMessage(error)}\n${JSON.stringify({ attempts: attemptsOf(error) }, null, 2)}`
                })
              )
            ),
            // A ToolFailure is the client's to read; runPromise would wrap it in a FiberFailure.
            Effect.either
          )
        )
        .then((ended) => {
          if (ended._tag === "Left") throw ended.left
          return ended.right
        })
  }
  return { tool, dispose: () => runtime.dispose() }
}
