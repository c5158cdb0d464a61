import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Option } from "effect"
import { config } from "../src/cli/commands.js"
import { removeEgressGuard } from "../src/outbound/egress.js"
import { countingServer } from "./support/countingServer.js"
import { it } from "./support/effectTest.js"

/**
 * The command line installs the egress guard as it loads the configuration: from then on the
 * process's `fetch` reaches the endpoints the configuration (and `--service`) names, and nothing
 * else.
 */

let unlisted: ReturnType<typeof countingServer>
let service: ReturnType<typeof countingServer>
beforeAll(() => {
  unlisted = countingServer(() => new Response("secret"))
  service = countingServer(() => Response.json({ ok: true }))
})
afterAll(() => {
  unlisted.stop()
  service.stop()
})

describe("the command line's configuration load", () => {
  test("guards the process's fetch: a named service is reached, an unlisted port is refused with no connection", async () => {
    const env = process.env.SEXTANT_CONFIG
    delete process.env.SEXTANT_CONFIG
    try {
      await it.run(config(Option.none(), [`http://127.0.0.1:${service.port}`]))
      expect((await fetch(`http://127.0.0.1:${service.port}/v1/routes`)).status).toBe(200)
      const refused = await fetch(`http://127.0.0.1:${unlisted.port}/admin/secret`).then(
        () => "reached",
        (e: unknown) => String(e)
      )
      expect(refused).toContain("refused")
      expect(unlisted.requests()).toBe(0)
      expect(service.requests()).toBe(1)
    } finally {
      removeEgressGuard()
      if (env !== undefined) process.env.SEXTANT_CONFIG = env
    }
  })
})
