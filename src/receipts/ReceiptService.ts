import { randomUUID } from "node:crypto"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { AppConfig } from "../config.js"
import {
  InvalidRequest,
  type NoEligibleProvider,
  type NotFound,
  notFound,
  type PaymentMismatch
} from "../domain/errors.js"
import { expectedTransfer } from "../domain/evidence.js"
import { ReceiptId } from "../domain/ids.js"
import {
  CommerceReceipt,
  type CreateReceiptRequest,
  type ReceiptVerification,
  type SignerDisclosure
} from "../domain/receipts.js"
import { offerSignerIn, sellerReceiptMismatch, verifySellerReceipt } from "../extensions/offerReceipt.js"
import { policyContext } from "../policy/evaluate.js"
import { Router } from "../routing/Router.js"
import { ObservationsRepo } from "../store/ObservationsRepo.js"
import { ReceiptsRepo } from "../store/ReceiptsRepo.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { Instruments } from "../telemetry/Instruments.js"
import { EvidenceRecorder } from "../verification/EvidenceRecorder.js"
import {
  eligibleCandidate,
  noEligibleProvider,
  paidOption,
  receiptBody,
  receiptPayment,
  responseDigest
} from "./build.js"
import { encodeBase64, stellarPublicKey } from "./ed25519.js"
import { signReceipt, verifyWithSigner } from "./receipt.js"
import { Signer, type SignerShape } from "./Signer.js"

export interface ReceiptServiceShape {
  /** Routes the purchase, signs the receipt, stores it durably and reports a transaction as evidence. */
  readonly create: (
    request: CreateReceiptRequest
  ) => Effect.Effect<CommerceReceipt, InvalidRequest | NoEligibleProvider | PaymentMismatch>
  readonly get: (id: ReceiptId) => Effect.Effect<CommerceReceipt, NotFound>
  /** The stored receipt checked against the live signer: the only check an HMAC receipt can get. */
  readonly verify: (id: ReceiptId) => Effect.Effect<ReceiptVerification, NotFound>
  readonly signer: () => Effect.Effect<SignerDisclosure>
}

/** Receipts: building, signing, storing and checking them. Needs the config, store, routing, evidence and a Signer. */
export class ReceiptService extends Context.Tag("sextant/ReceiptService")<ReceiptService, ReceiptServiceShape>() {
  static readonly Live = Layer.effect(
    ReceiptService,
    Effect.suspend(() => make)
  )
}

const disclosure = (signer: SignerShape): SignerDisclosure =>
  signer.publicKey === null
    ? {
        mode: signer.algorithm,
        algorithm: signer.algorithm,
        publicKey: null,
        stellarPublicKey: null,
        serviceSigner: signer.signerId,
        offlineVerifiable: false,
        note:
          "hmac-sha256 receipts are attestations only this service can check (GET /v1/receipts/{id}/verify); " +
          "configure signer.ed25519KeyFile for receipts anyone can verify offline"
      }
    : {
        mode: signer.algorithm,
        algorithm: signer.algorithm,
        publicKey: encodeBase64(signer.publicKey),
        stellarPublicKey: stellarPublicKey(signer.publicKey),
        serviceSigner: signer.signerId,
        offlineVerifiable: true,
        note:
          "receipts are Ed25519 signatures over the RFC 8785 canonical JSON of the receipt without serviceSignature, " +
          "serviceSigner and signatureAlgorithm; verify offline with this key (sextant receipt verify <file>)"
      }

const decodeStored = Schema.decodeUnknown(CommerceReceipt)

const make = Effect.gen(function* () {
  const router = yield* Router
  const resources = yield* ResourceReadsRepo
  const receipts = yield* ReceiptsRepo
  const observations = yield* ObservationsRepo
  const recorder = yield* EvidenceRecorder
  const signer = yield* Signer
  const instruments = yield* Instruments
  const config = yield* AppConfig
  // "Was this transaction receipted for this resource before?" and the insert are one step, so two
  // receipts for one transaction posted at once still count it once.
  const transactionLock = yield* Effect.makeSemaphore(1)

  const stored = (id: ReceiptId) =>
    receipts
      .get(id)
      .pipe(
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("receipt", id)), onSome: Effect.succeed }))
      )

  const create = (request: CreateReceiptRequest) =>
    Effect.gen(function* () {
      const payment = yield* receiptPayment(request.payment)
      const { sellerReceipt } = request
      // Checked before routing: a key id that would need a lookup is refused before anything else runs.
      const seller =
        sellerReceipt === undefined ? undefined : yield* Effect.promise(() => verifySellerReceipt(sellerReceipt))
      if (seller !== undefined && "refusal" in seller)
        return yield* new InvalidRequest({ message: `sellerReceipt: ${seller.refusal}` })
      const bodySha256 = yield* responseDigest(request.response)
      const { capability, constraints, optimizeFor } = request.request
      const decision = yield* router.route({ capability, constraints, optimizeFor })
      const { selected, chosen } = yield* eligibleCandidate(decision, request.resourceId)
      const resource = yield* resources.get(chosen.resourceId).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () =>
              Effect.fail(
                noEligibleProvider(`resource "${chosen.resourceId}" left the catalog while the receipt was made`)
              ),
            onSome: Effect.succeed
          })
        )
      )
      const offerSigner =
        seller === undefined
          ? null
          : offerSignerIn(
              (yield* observations.latestHealthy([chosen.resourceId])).get(chosen.resourceId)?.detail ?? null
            )
      const mismatch =
        seller === undefined
          ? null
          : sellerReceiptMismatch(seller.payload, seller.kid, {
              transactionHash: payment.transactionHash,
              network: payment.network,
              resourceUrl: resource.resource.url,
              offerSigner
            })
      if (mismatch !== null) return yield* new InvalidRequest({ message: `sellerReceipt: ${mismatch}` })
      const now = new Date(yield* Clock.currentTimeMillis)
      const paid = yield* paidOption(payment, resource, chosen, decision.policy, policyContext(config, now))
      const timestamp = now.toISOString()
      const body = receiptBody({
        receiptId: ReceiptId.make(`rcpt_${randomUUID()}`),
        timestamp,
        request: request.request,
        decision,
        selected,
        chosen,
        resource,
        paid,
        payment,
        response: { status: request.response.status, bodySha256 },
        sellerReceipt: request.sellerReceipt
      })
      const receipt = yield* signReceipt(body, signer).pipe(
        Effect.mapError((e) => new InvalidRequest({ message: `cannot be signed: ${e.message}` }))
      )
      const { transactionHash } = payment
      if (transactionHash === null) {
        yield* receipts.insert(receipt)
        return receipt
      }
      const countedBefore = yield* transactionLock.withPermits(1)(
        Effect.zipLeft(receipts.hasTransaction(chosen.resourceId, transactionHash), receipts.insert(receipt))
      )
      // One transaction is one piece of evidence however many receipts name it: a repeat is signed
      // and stored, but does not count again.
      if (!countedBefore) {
        // Transaction evidence (level 3, docs/decisions.md) is a paid call the resource answered with
        // 2xx whose transaction the ledger then confirms; a receipt is the buyer's word until then.
        const answered = request.response.status >= 200 && request.response.status < 300
        yield* recorder.recordEconomic(
          {
            source: "receipt",
            resourceId: chosen.resourceId,
            payTo: paid.option.payTo,
            success: answered,
            transactionHash,
            at: timestamp,
            payer: null,
            expected: expectedTransfer(paid.option)
          },
          [resource]
        )
      }
      return receipt
    })

  return ReceiptService.of({
    create: (request) =>
      create(request).pipe(
        Effect.tap(() => instruments.receiptIssued),
        Effect.withSpan("ReceiptService.create")
      ),
    get: (id) =>
      Effect.flatMap(stored(id), (raw) => Effect.orDie(decodeStored(raw))).pipe(Effect.withSpan("ReceiptService.get")),
    verify: (id) =>
      Effect.flatMap(stored(id), (raw) =>
        Effect.map(verifyWithSigner(raw, signer), (check) => ({ receiptId: id, ...check }))
      ).pipe(Effect.withSpan("ReceiptService.verify")),
    signer: () => Effect.succeed(disclosure(signer)).pipe(Effect.withSpan("ReceiptService.signer"))
  })
})
