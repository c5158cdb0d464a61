import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { ReceiptId, ResourceId } from "../domain/ids.js"
import type { CommerceReceipt } from "../domain/receipts.js"
import { decodeRows, repository } from "./repository.js"

/** What ReceiptsRepo offers. */
export interface ReceiptsRepoShape {
  /** Durable once this succeeds: the receipt is stored as the JSON the buyer gets. */
  readonly insert: (receipt: CommerceReceipt) => Effect.Effect<void>
  /** Whether a receipt for this resource already names this transaction. */
  readonly hasTransaction: (resourceId: ResourceId, transactionHash: string) => Effect.Effect<boolean>
  readonly get: (id: ReceiptId) => Effect.Effect<Option.Option<unknown>>
}

export class ReceiptsRepo extends Context.Tag("sextant/ReceiptsRepo")<ReceiptsRepo, ReceiptsRepoShape>() {
  static readonly Live = Layer.suspend(() => Layer.effect(ReceiptsRepo, make))
}

/** The receipt as issued: parsed, not reshaped, so a signature check sees every member. */
const decodeStored = decodeRows(Schema.Struct({ receipt: Schema.parseJson() }))

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return repository("ReceiptsRepo", {
    insert: (receipt: CommerceReceipt) =>
      sql`INSERT INTO receipts (id, resource_id, transaction_hash, signature_algorithm, created_at, receipt)
        VALUES (${receipt.receiptId}, ${receipt.service.resourceId}, ${receipt.payment.transactionHash},
          ${receipt.signatureAlgorithm}, ${receipt.timestamp}, ${JSON.stringify(receipt)})`.pipe(Effect.asVoid),
    hasTransaction: (resourceId: ResourceId, transactionHash: string) =>
      sql<{ found: number }>`SELECT 1 AS found FROM receipts
        WHERE transaction_hash = ${transactionHash} AND resource_id = ${resourceId} LIMIT 1`.pipe(
        Effect.map((rows) => rows.length > 0)
      ),
    get: (id: ReceiptId) =>
      sql`SELECT receipt FROM receipts WHERE id = ${id}`.pipe(
        Effect.flatMap(decodeStored),
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (row): unknown => row.receipt))
      )
  })
})
