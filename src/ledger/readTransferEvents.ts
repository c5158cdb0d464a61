import type { rpc } from "@stellar/stellar-sdk"
import { Effect } from "effect"
import { cursorLedger, transferOfEvent, transferTopicFilters } from "./decode.js"
import { type LedgerReaderShape, LedgerUnavailable, type TransferEvent } from "./LedgerReader.js"
import type { LedgerCalls } from "./ledgerCalls.js"

/** A read of many pages stops here rather than loop on an RPC that never reaches the end. */
const MAX_EVENT_PAGES = 1000

/** `transfer` events of one contract from one address to another in a ledger range, page by page from RPC. */
export const readTransferEvents =
  ({ names, call, decode }: LedgerCalls, soroban: rpc.Server, pageSize: number): LedgerReaderShape["transferEvents"] =>
  (query) =>
    Effect.gen(function* () {
      if (query.endLedger < query.startLedger) return []
      const filters: Array<rpc.Api.EventFilter> = [
        { type: "contract", contractIds: [query.contract], topics: transferTopicFilters(query.from, query.to) }
      ]
      const events: Array<TransferEvent> = []
      // The first page asks for the range (endLedger is exclusive); later pages may only carry the
      // cursor, and RPC scans a bounded number of ledgers per request, so a short page does not
      // mean the range is done: its cursor says how far the scan got.
      let request: rpc.Api.GetEventsRequest = {
        filters,
        startLedger: query.startLedger,
        endLedger: query.endLedger + 1,
        limit: pageSize
      }
      for (let page = 0; page < MAX_EVENT_PAGES; page++) {
        const answer = yield* call("rpc", "getEvents", () => soroban.getEvents(request))
        const decoded = yield* decode("rpc", "getEvents", () =>
          answer.events.filter((e) => e.inSuccessfulContractCall !== false).map(transferOfEvent)
        )
        for (const event of decoded) {
          if (
            event &&
            event.contract === query.contract &&
            event.from === query.from &&
            event.to === query.to &&
            event.ledger >= query.startLedger &&
            event.ledger <= query.endLedger
          ) {
            events.push(event)
          }
        }
        const lastLedger = answer.events.at(-1)?.ledger ?? 0
        const scanned = cursorLedger(answer.cursor)
        const full = answer.events.length >= pageSize
        if (lastLedger > query.endLedger) return events
        if (!full && (scanned === null || scanned >= Math.min(query.endLedger, answer.latestLedger))) return events
        if (!answer.cursor)
          return yield* new LedgerUnavailable({
            message: `${names.rpc} getEvents answered a full page without a cursor`
          })
        request = { filters, cursor: answer.cursor, limit: pageSize }
      }
      return yield* new LedgerUnavailable({
        message: `${names.rpc} getEvents did not reach ledger ${query.endLedger} in ${MAX_EVENT_PAGES} pages`
      })
    }).pipe(Effect.withSpan("LedgerReader.transferEvents"))
