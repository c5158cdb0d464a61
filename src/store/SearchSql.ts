import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlError } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { Context, Duration, Effect, Layer, Option } from "effect"
import { StoreInfoTag } from "./Database.js"
import type { SearchWorkerAnswer, SearchWorkerMessage } from "./searchWorker.js"
import { sqliteCompiler } from "./sqliteClient.js"

/**
 * How long one search statement may run before it is ended (its worker thread terminated and
 * replaced). A search the query bounds admit stays far below it at the catalog size
 * docs/performance.md states; it is the backstop for a catalog beyond that.
 */
export const SEARCH_STATEMENT_BUDGET_MS = 10_000

/** How long a worker may take to start and open the store before the statement is given up. */
const WORKER_START = Duration.seconds(10)

/**
 * The worker's entry point: in the compiled binary an entry point of its own (package.json
 * `build`), stored under the entry points' common root (src/), while this module is bundled into
 * the binary's root file.
 */
const WORKER_URL = import.meta.url.startsWith("file:///$bunfs/")
  ? new URL("./store/searchWorker.ts", import.meta.url)
  : new URL("./searchWorker.ts", import.meta.url)

/**
 * The SqlClient that search's ranking statements run on (`ResourceReadsRepo.searchPage`), whose
 * cost grows with the catalog. On a SQLite file they run on a worker thread with a read-only
 * connection of their own, one at a time, each within a budget (over it: SqlError, answered 503
 * STORE_UNAVAILABLE), so no search holds the thread that answers every other request. Postgres
 * runs them on its own server; `:memory:` cannot be shared with a thread, so there they run on
 * the store's client (tests and `sextant` runs without a file).
 */
export class SearchSql extends Context.Tag("sextant/SearchSql")<SearchSql, SqlClient.SqlClient>() {
  static readonly layer = (budgetMs: number = SEARCH_STATEMENT_BUDGET_MS) =>
    Layer.scoped(
      SearchSql,
      Effect.gen(function* () {
        const info = yield* StoreInfoTag
        if (info.kind !== "sqlite" || info.location === ":memory:") return yield* SqlClient.SqlClient
        return yield* workerClient(info.location, budgetMs)
      })
    )
  static readonly Live = SearchSql.layer()
}

const failure = (message: string) => new SqlError.SqlError({ message, cause: new Error(message) })

const workerClient = (filename: string, budgetMs: number) =>
  Effect.gen(function* () {
    interface Running {
      readonly thread: Worker
      readonly ready: Promise<void>
    }
    let worker: Running | null = null
    let nextId = 0
    const waiting = new Map<number, (answer: SearchWorkerAnswer) => void>()

    const spawn = (): Running => {
      // Not kept alive for its own sake: a CLI run that built the store exits when its work is done.
      const thread = new Worker(WORKER_URL, { ref: false })
      const ready = new Promise<void>((resolve) => {
        thread.onmessage = (event: MessageEvent<SearchWorkerAnswer>) => {
          const answer = event.data
          if ("ready" in answer) resolve()
          else waiting.get(answer.id)?.(answer)
        }
        // A broken worker is dropped, not restarted at once: the next statement starts another.
        thread.onerror = () => {
          thread.terminate()
          if (worker === running) worker = null
          resolve()
          for (const [id, answer] of waiting) answer({ id, error: "the search reader stopped" })
        }
      })
      thread.postMessage({ open: filename } satisfies SearchWorkerMessage)
      const running = { thread, ready }
      return running
    }
    const end = (which: Running) => {
      which.thread.terminate()
      if (worker === which) worker = null
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => worker !== null && end(worker)))

    const one = yield* Effect.makeSemaphore(1)
    const run = (sql: string, params: ReadonlyArray<unknown>, values: boolean) =>
      one.withPermits(1)(
        Effect.gen(function* () {
          const current = worker ?? spawn()
          worker = current
          const started = yield* Effect.promise(() => current.ready).pipe(Effect.timeout(WORKER_START), Effect.option)
          if (Option.isNone(started) || worker !== current) {
            end(current)
            return yield* Effect.fail(failure("the search reader did not start"))
          }
          return yield* Effect.async<ReadonlyArray<unknown>, SqlError.SqlError>((resume) => {
            const id = nextId++
            const finish = (answer: SearchWorkerAnswer) => {
              clearTimeout(timer)
              waiting.delete(id)
              resume(
                "rows" in answer
                  ? Effect.succeed(answer.rows)
                  : Effect.fail(failure("error" in answer ? answer.error : "no answer"))
              )
            }
            const timer = setTimeout(() => {
              end(current)
              finish({ id, error: `the search statement ran over its budget of ${budgetMs} ms` })
            }, budgetMs)
            waiting.set(id, finish)
            current.thread.postMessage({ id, sql, params, values } satisfies SearchWorkerMessage)
            // Interrupted while it runs (the client went away): nobody wants the rows, so the thread is freed.
            return Effect.sync(() => {
              clearTimeout(timer)
              if (waiting.delete(id)) end(current)
            })
          })
        })
      )

    const connection = {
      execute: (sql, params, transformRows) =>
        transformRows
          ? Effect.map(run(sql, params, false), (rows) => transformRows(rows as never))
          : run(sql, params, false),
      executeRaw: (sql, params) => run(sql, params, false),
      executeValues: (sql, params) => run(sql, params, true) as never,
      executeUnprepared(sql, params, transformRows) {
        return this.execute(sql, params, transformRows)
      },
      executeStream: () => Effect.dieMessage("executeStream not implemented")
    } as Connection
    return yield* SqlClient.make({
      acquirer: Effect.succeed(connection),
      compiler: sqliteCompiler,
      // Search only reads: a transaction here would be a mistake, so it fails loudly.
      transactionAcquirer: Effect.dieMessage("SearchSql runs no transactions"),
      spanAttributes: [["db.system.name", "sqlite"]]
    }).pipe(Effect.provide(Reactivity.layer))
  })
