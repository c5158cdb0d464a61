import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { configReference, REFERENCE_PATH } from "../scripts/config-reference.js"

/**
 * docs/reference/configuration.md is generated from the config schema's annotations: a field added,
 * a default changed or a description edited without `npm run docs:config` fails here.
 */
describe("configuration reference", () => {
  const committed = readFileSync(REFERENCE_PATH, "utf8")

  test("the committed file is what the generator prints from src/config.ts", () => {
    expect(committed).toBe(configReference())
  })

  test("it lists defaults as the schema decodes them, and the fields of lists of structs", () => {
    expect(committed).toContain("| `probes.intervalSeconds` | `60` |")
    expect(committed).toContain('| `limits.validate` | `{"requests":60,"windowSeconds":60}` |')
    expect(committed).toContain("| `catalogSources[].intervalSeconds` | `3600` |")
    expect(committed).toContain("| `facilitators[].url` | required |")
    expect(committed).toContain("| `apiKeys[].role` | absent |")
  })
})
