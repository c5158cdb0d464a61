// Writes docs/reference/cli.md from the command definition (`npm run docs:cli`).

import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { renderReference } from "../src/cli/reference.js"

writeFileSync(join(import.meta.dir, "..", "docs", "reference", "cli.md"), await Effect.runPromise(renderReference))
