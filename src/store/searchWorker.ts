import { Database } from "bun:sqlite"

/**
 * The thread search statements run on (SearchSql starts it, and ends it when a statement runs over
 * its budget). bun:sqlite runs a statement to its end on the calling thread, so a statement whose
 * cost grows with the catalog would hold the request thread; here it holds only this one. It
 * reads the store's file through a read-only connection of its own: in WAL mode it sees the last
 * commit and never blocks a writer. Built into the binary as its own entry point (package.json
 * `build`).
 */

export type SearchWorkerMessage =
  | { readonly open: string }
  | { readonly id: number; readonly sql: string; readonly params: ReadonlyArray<unknown>; readonly values: boolean }

export type SearchWorkerAnswer =
  | { readonly ready: true }
  | { readonly id: number; readonly rows: ReadonlyArray<unknown> }
  | { readonly id: number; readonly error: string }

declare const self: Worker

let db: Database | null = null

self.onmessage = (event: MessageEvent<SearchWorkerMessage>) => {
  const message = event.data
  if ("open" in message) {
    db = new Database(message.open, { readonly: true })
    db.run("PRAGMA busy_timeout = 5000;")
    self.postMessage({ ready: true } satisfies SearchWorkerAnswer)
    return
  }
  try {
    if (db === null) throw new Error("the search reader has no database open")
    const statement = db.query(message.sql)
    const params = message.params as Array<never>
    const rows = message.values ? statement.values(...params) : statement.all(...params)
    self.postMessage({ id: message.id, rows: rows ?? [] } satisfies SearchWorkerAnswer)
  } catch (error) {
    self.postMessage({
      id: message.id,
      error: error instanceof Error ? error.message : String(error)
    } satisfies SearchWorkerAnswer)
  }
}
