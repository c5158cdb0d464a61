import { describe, expect, test } from "bun:test"
import { BAZAAR, rejected, withBazaarStatus } from "../src/extensions/bazaar.js"

/** The settle answer a buyer reads: the bazaar status joins whatever extension responses it carried. */
describe("a settle answer with its bazaar status", () => {
  const answer: { readonly success: boolean; readonly transaction: string; readonly extensionResponses?: unknown } = {
    success: true,
    transaction: "abc"
  }

  test("no bazaar extension leaves the answer as it was", () => {
    expect(withBazaarStatus(answer, null)).toBe(answer)
  })

  test("the status is added under bazaar, beside the other extensions' responses", () => {
    const other: typeof answer = { ...answer, extensionResponses: { "payment-identifier": { status: "success" } } }
    expect(withBazaarStatus(other, { status: "processing" })).toEqual({
      ...answer,
      extensionResponses: { "payment-identifier": { status: "success" }, [BAZAAR]: { status: "processing" } }
    })
  })

  test("an extensionResponses that is not an object is replaced, not spread", () => {
    for (const extensionResponses of [["x"], "text", 7]) {
      const replaced: unknown = withBazaarStatus(
        { ...answer, extensionResponses },
        rejected("quota")
      ).extensionResponses
      expect(replaced).toEqual({
        [BAZAAR]: { status: "rejected", rejectedReason: "quota" }
      })
    }
  })
})
