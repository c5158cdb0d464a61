import { Database } from "bun:sqlite"
import { mkdirSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { Clock, Context, Data, Effect, Layer } from "effect"
import { fitsWindow, windowStart } from "./spendWindow.js"

/** The window has no room for the amount: nothing was signed. */
export class OverSpendLimit extends Data.TaggedError("OverSpendLimit")<{
  /** Base units counted in the window, the amount asked and the limit. */
  readonly spent: string
  readonly amount: string
  readonly limit: string
}> {}

/** The ledger file could not be opened, read or written: the purchase stops before signing (fail closed). */
export class SpendLedgerUnavailable extends Data.TaggedError("SpendLedgerUnavailable")<{ readonly reason: string }> {}

/** A reservation: its row id. */
export type Reservation = number & { readonly Reservation: unique symbol }

export interface SpendLedgerShape {
  /**
   * Counts `amount` (base units) against `payer`'s rolling window before anything is signed, when
   * the window leaves room for it; other processes on the same file wait (an immediate transaction).
   */
  readonly reserve: (
    payer: string,
    amount: bigint,
    resourceId: string
  ) => Effect.Effect<Reservation, OverSpendLimit | SpendLedgerUnavailable>
  /** Nothing was signed or sent under the reservation: it stops counting. */
  readonly release: (reservation: Reservation) => Effect.Effect<void, SpendLedgerUnavailable>
  /**
   * A signed payment left the machine: it counts at the amount signed, for good, once however many
   * times it was sent, with the payment identifier it carried (if any).
   */
  readonly commit: (
    reservation: Reservation,
    amount: bigint,
    paymentIdentifier?: string
  ) => Effect.Effect<void, SpendLedgerUnavailable>
  /** The payment identifiers recorded for `payer`'s payments in the window, oldest first. */
  readonly identifiers: (payer: string) => Effect.Effect<ReadonlyArray<string>, SpendLedgerUnavailable>
  /** Base units counted in `payer`'s window now. */
  readonly spent: (payer: string) => Effect.Effect<bigint, SpendLedgerUnavailable>
}

/**
 * The buyer's own record of what its key signed, in a rolling window, durable across restarts and
 * independent of any service: `buy` reserves before signing, so neither a compromised service nor a
 * resource can make the key sign past `limit`. A reservation a crash left behind keeps counting
 * (fail closed).
 */
export class SpendLedger extends Context.Tag("sextant/SpendLedger")<SpendLedger, SpendLedgerShape>() {
  static readonly layer = (options: SpendLedgerOptions) => Layer.scoped(SpendLedger, make(options))
}

export interface SpendLedgerOptions {
  readonly file: string
  readonly windowSeconds: number
  /** Base units the key may sign for within the window. */
  readonly limit: bigint
}

const SCHEMA = `CREATE TABLE IF NOT EXISTS spends (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  payer TEXT NOT NULL,
  amount TEXT NOT NULL,
  at_ms INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('reserved', 'sent')),
  resource_id TEXT NOT NULL,
  payment_id TEXT
);
CREATE INDEX IF NOT EXISTS spends_payer_at ON spends (payer, at_ms);`

const io = <A>(what: string, f: () => A) =>
  Effect.try({
    try: f,
    catch: (e) => new SpendLedgerUnavailable({ reason: `${what}: ${e instanceof Error ? e.message : String(e)}` })
  })

/**
 * Opens (creating) the SQLite file. `synchronous = FULL`: a reservation is on disk before the
 * payment it covers is signed, so a crash right after signing still counts it. Amounts are stored
 * as decimal text and summed as bigints: base units may exceed 2^53.
 */
const open = (file: string) =>
  io(`cannot open the spend ledger ${file}`, () => {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
    const db = new Database(file, { create: true, strict: true })
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;")
    db.exec(SCHEMA)
    // A ledger written before payment identifiers were recorded gets the column.
    const columns = db.query<{ name: string }, []>("PRAGMA table_info(spends)").all()
    if (!columns.some((c) => c.name === "payment_id")) db.exec("ALTER TABLE spends ADD COLUMN payment_id TEXT")
    return db
  })

const make = (options: SpendLedgerOptions) =>
  Effect.gen(function* () {
    const path = resolve(options.file)
    const db = yield* Effect.acquireRelease(open(path), (db) => Effect.sync(() => db.close()))
    const amounts = db.query<{ amount: string }, { payer: string; since: number }>(
      "SELECT amount FROM spends WHERE payer = $payer AND at_ms > $since"
    )
    const insert = db.query(
      "INSERT INTO spends (payer, amount, at_ms, state, resource_id) VALUES ($payer, $amount, $at, 'reserved', $resource)"
    )
    const remove = db.query("DELETE FROM spends WHERE id = $id")
    const settle = db.query(
      "UPDATE spends SET state = 'sent', amount = $amount, payment_id = $paymentId WHERE id = $id"
    )
    const identified = db.query<{ payment_id: string }, { payer: string; since: number }>(
      "SELECT payment_id FROM spends WHERE payer = $payer AND at_ms > $since AND payment_id IS NOT NULL ORDER BY id"
    )

    const spentSince = (payer: string, nowMs: number) =>
      amounts
        .all({ payer, since: windowStart(nowMs, options.windowSeconds) })
        .reduce((sum, row) => sum + BigInt(row.amount), 0n)

    // Read and insert in one IMMEDIATE transaction: two buys on one key (two processes) cannot both
    // see the same room.
    const reserveIn = db.transaction(
      (
        payer: string,
        amount: bigint,
        resourceId: string,
        nowMs: number
      ): { readonly spent: bigint; readonly id: Reservation | null } => {
        const spent = spentSince(payer, nowMs)
        if (!fitsWindow(spent, amount, options.limit)) return { spent, id: null }
        const row = insert.run({ payer, amount: amount.toString(), at: nowMs, resource: resourceId })
        return { spent, id: Number(row.lastInsertRowid) as Reservation }
      }
    )

    return SpendLedger.of({
      reserve: (payer, amount, resourceId) =>
        Effect.gen(function* () {
          const nowMs = yield* Clock.currentTimeMillis
          const result = yield* io("cannot reserve in the spend ledger", () =>
            reserveIn.immediate(payer, amount, resourceId, nowMs)
          )
          if (result.id !== null) return result.id
          return yield* new OverSpendLimit({
            spent: result.spent.toString(),
            amount: amount.toString(),
            limit: options.limit.toString()
          })
        }),
      release: (reservation) => io("cannot release in the spend ledger", () => void remove.run({ id: reservation })),
      commit: (reservation, amount, paymentIdentifier) =>
        io(
          "cannot record in the spend ledger",
          () => void settle.run({ id: reservation, amount: amount.toString(), paymentId: paymentIdentifier ?? null })
        ),
      identifiers: (payer) =>
        Effect.flatMap(Clock.currentTimeMillis, (nowMs) =>
          io("cannot read the spend ledger", () =>
            identified.all({ payer, since: windowStart(nowMs, options.windowSeconds) }).map((r) => r.payment_id)
          )
        ),
      spent: (payer) =>
        Effect.flatMap(Clock.currentTimeMillis, (nowMs) =>
          io("cannot read the spend ledger", () => spentSince(payer, nowMs))
        )
    })
  })

/** The default ledger file: next to the key, so each key has its own. */
export const defaultSpendLedgerFile = (keyFile: string) => `${keyFile}.spend.db`
