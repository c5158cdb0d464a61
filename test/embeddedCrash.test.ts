import { Database } from "bun:sqlite"
import { afterAll, describe, expect, test } from "bun:test"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { seededBuyer, settleBody, signedPayment } from "./fixtures/stellarPayment.js"
import { feeKeyFile } from "./support/embeddedFacilitator.js"
import { pollUntil } from "./support/poll.js"
import { type SellerProcess, startSellerProcess } from "./support/sellerProcess.js"
import { SELLER_PAY_TO } from "./support/sellerStack.js"
import { request } from "./support/server.js"

/**
 * SIGKILLs of `sextant serve` between an embedded settle's sendTransaction and its answer (the
 * fixture ledger accepted the transaction, no ledger has closed on it yet), then a restart and a
 * replay of every settle: no payment is ever sent to the network twice, and every payment the
 * ledger executed ends `settled` in the journal and is answered 200. CI runs KILLS (default 5);
 * `EMBEDDED_CRASH_KILLS=100 npx bun test test/embeddedCrash.test.ts` runs the hundred.
 */
const KILLS = Number(process.env.EMBEDDED_CRASH_KILLS ?? 5)
const ledger = startFixtureLedger({ network: { closeEveryMs: 400 } })
// Payers are seeds 300 + i (bytes 44-143 for a hundred kills); the fee account is none of them.
const fee = feeKeyFile(200)
let stack: SellerProcess
afterAll(async () => {
  await stack?.stop()
  ledger.stop()
})

const journal = (database: string) => {
  const db = new Database(database, { readonly: true })
  try {
    return db.query("SELECT state, transaction_hash FROM settlements").all() as Array<{
      state: string
      transaction_hash: string | null
    }>
  } finally {
    db.close()
  }
}

describe("embedded facilitator crash injection", () => {
  test(
    `${KILLS} SIGKILLs between submit and answer: 0 double submissions, 0 lost outcomes`,
    async () => {
      stack = await startSellerProcess({
        facilitators: [
          {
            id: "embedded",
            type: "stellar",
            network: "stellar:testnet",
            feeAccountKeyFile: fee.path,
            channels: 4,
            pollIntervalMs: 50
          }
        ],
        ledger: {
          sorobanRpcUrl: ledger.rpcUrl,
          horizonUrl: ledger.horizonUrl,
          pollIntervalSeconds: 0.3,
          timeoutMs: 2000
        },
        limits: { settle: null }
      })
      const bodies: Array<{ payer: string; body: unknown }> = []
      for (let kill = 0; kill < KILLS; kill++) {
        const child = await stack.launch()
        if (kill === 0) await stack.validate(child)
        const seed = 300 + kill
        const { requirements, payment } = await signedPayment(SELLER_PAY_TO, {
          buyer: seededBuyer(seed),
          validUntilLedger: ledger.latestLedger() + 50
        })
        const body = settleBody(payment, requirements)
        bodies.push({ payer: seededBuyer(seed).publicKey(), body })
        const acceptedBefore = ledger.network.accepted.length
        const inFlight = request(`${child.url}/x402/settle`, { method: "POST", json: body }).catch((e: unknown) => e)
        await pollUntil(
          "the network accepted the settle's transaction",
          async () => ledger.network.accepted.length,
          (n) => n > acceptedBefore,
          { timeoutMs: 10_000, everyMs: 2 }
        )
        await child.kill()
        await inFlight
      }

      const final = await stack.launch()
      // The reconciler reads the ledger for every settle the crashes left open.
      await pollUntil(
        "every journal entry is resolved from the ledger",
        async () => journal(stack.database),
        (rows) => rows.length === KILLS && rows.every((r) => r.state === "settled"),
        { timeoutMs: 30_000, everyMs: 200 }
      )
      for (const { payer, body } of bodies) {
        const reply = await request(`${final.url}/x402/settle`, { method: "POST", json: body })
        expect(reply.status).toBe(200)
        expect(reply.body).toMatchObject({ success: true, payer })
        // Sent to the network once, executed once, whatever the crashes and the replay did.
        expect(ledger.network.accepted.filter((a) => a.payer === payer)).toHaveLength(1)
        expect(ledger.transfersBetween(payer, SELLER_PAY_TO)).toBe(1)
      }
    },
    60_000 + KILLS * 8_000
  )
})
