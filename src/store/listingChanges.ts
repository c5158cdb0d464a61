import type { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import type { ResourceId } from "../domain/ids.js"
import type { ListingHold } from "../domain/resources.js"
import { sortableId } from "./sortableId.js"

/** Who changed a listing and why; an unlisting also says what may list it again (default "operator"). */
export interface ListingChange {
  readonly actor: string
  readonly reason: string
  readonly hold?: ListingHold
}

/** The hold a listing change leaves: none once listed, else the change's ("operator" by default). */
export const holdAfter = (listed: boolean, change: { readonly hold?: ListingHold | null }) =>
  listed ? null : (change.hold ?? "operator")

/** Stores changes of listing, one statement for many resources, at the Clock's time. */
export const recordListings =
  (sql: SqlClient.SqlClient) =>
  (moved: ReadonlyArray<{ readonly id: ResourceId; readonly listed: boolean }>, change: ListingChange) =>
    moved.length === 0
      ? Effect.void
      : Effect.flatMap(Clock.currentTimeMillis, (atMs) =>
          sql`INSERT INTO listing_changes ${sql.insert(
            moved.map((m) => ({
              id: sortableId("ls", atMs),
              resource_id: m.id,
              listed: m.listed ? 1 : 0,
              actor: change.actor,
              reason: change.reason,
              at: new Date(atMs).toISOString(),
              at_ms: atMs
            }))
          )}`.pipe(Effect.asVoid)
        )

/** The Clock's time as the store's ISO text columns keep it. */
export const nowIso = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())
