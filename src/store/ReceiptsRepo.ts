import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import type { CommerceReceipt } from "../domain/receipts.js"

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return {
    /** Durable once this succeeds: the receipt is stored as the JSON the buyer gets. */
    insert: (receipt: CommerceReceipt) =>
      sql`INSERT INTO receipts (id, resource_id, transaction_hash, signature_algorithm, created_at, receipt)
        VALUES (${receipt.receiptId}, ${receipt.service.resourceId}, ${receipt.payment.transactionHash},
          ${receipt.signatureAlgorithm}, ${receipt.timestamp}, ${JSON.stringify(receipt)})`.pipe(Effect.asVoid),
    /** Whether a receipt for this resource already names this transaction. */
    hasTransaction: (resourceId: string, transactionHash: string) =>
      sql<{ found: number }>`SELECT 1 AS found FROM receipts
        WHERE transaction_hash = ${transactionHash} AND resource_id = ${resourceId} LIMIT 1`.pipe(
        Effect.map((rows) => rows.length > 0)
      ),
    /** The stored JSON as issued, parsed but not reshaped, so a signature check sees every member. */
    get: (id: string) =>
      sql<{ receipt: string }>`SELECT receipt FROM receipts WHERE id = ${id}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (row): unknown => JSON.parse(row.receipt)))
      )
  }
})

export class ReceiptsRepo extends Context.Tag("sextant/ReceiptsRepo")<ReceiptsRepo, Effect.Effect.Success<typeof make>>() {
  static readonly Live = Layer.effect(ReceiptsRepo, make)
}
