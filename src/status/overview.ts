import type { FacilitatorStatus } from "../domain/x402.js"
import { catalogSection } from "./catalogPage.js"
import { html } from "./html.js"
import { layout } from "./layout.js"
import { facilitatorsSection, type Hidden, journalSection } from "./operations.js"
import type { CatalogView, JournalView } from "./StatusReader.js"

/** `/status`: the catalog, the facilitators and the settlement journal on one page. */
export const overviewPage = (
  catalog: CatalogView,
  facilitators: ReadonlyArray<FacilitatorStatus> | Hidden,
  journal: JournalView | Hidden,
  decimals: number
): string =>
  layout(
    "Status",
    html`<h1>Status</h1>
${catalogSection(catalog)}
${facilitatorsSection(facilitators)}
${journalSection(journal, decimals)}`
  )
