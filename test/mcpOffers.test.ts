import { afterAll, beforeAll, describe, expect } from "bun:test"
import { Effect } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import { observeMcp } from "../src/verification/mcpProbe.js"
import { mcpSessions } from "../src/verification/mcpSessions.js"
import { CLAW } from "./fixtures/stellarAssets.js"
import { startVerticalMcp } from "./fixtures/verticalMcp.js"
import { it } from "./support/effectTest.js"
import { testConfig } from "./support/server.js"

/** An MCP probe judges a tool's signed offers as an HTTP probe judges a challenge's. */

let vertical: Awaited<ReturnType<typeof startVerticalMcp>>
beforeAll(async () => {
  vertical = await startVerticalMcp()
})
afterAll(() => vertical.stop())

describe("signed offers over MCP", () => {
  it.live("the vertical's tool answers a signed offer: the probe records its signer", () =>
    Effect.gen(function* () {
      const base = testConfig()
      const config = testConfig({ probes: { ...base.probes, allowPrivateTargets: true, timeoutMs: 5000 } })
      const observed = yield* observeMcp(
        {
          resourceId: ResourceId.make("intel.mcp.inspect"),
          url: vertical.mcpUrl,
          method: "POST",
          advertised: [],
          mcp: { kind: "tool", toolName: "inspect", transport: "streamable-http", example: { asset: CLAW } }
        },
        config,
        mcpSessions(config)
      )
      expect(observed.observation.method).toStartWith("tools/call")
      expect(observed.observation.detail).toContain("offer signed by did:jwk:")
    })
  )
})
