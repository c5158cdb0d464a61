import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { LedgerNotReadable, NotFound, RateLimited, TransactionNotConfirmed } from "../domain/errors.js"
import { OutcomeAnswer, OutcomeReport } from "../domain/outcomes.js"
import { PreflightAnswer, PreflightRequest } from "../domain/preflight.js"
import { ApiKeyAuth } from "./auth.js"
import { failsWith, strict } from "./parse.js"

/**
 * A payment a client is about to make, judged on what probes observed of its URL and origin; open
 * to anyone, as policy evaluation is (SPEC Authentication 1). Unknown URLs are judged too, never
 * a 404.
 */
export class PreflightApi extends HttpApiGroup.make("preflight")
  .add(
    HttpApiEndpoint.post("preflight", "/v1/preflight")
      .setPayload(strict(PreflightRequest))
      .addSuccess(PreflightAnswer)
      .annotate(
        OpenApi.Description,
        "ALLOW, WARN or DENY for a payment about to be made (the 402 challenge or the chosen requirements, and the URL), with reason codes and the evidence behind each: the payees the URL's and origin's probes observed, the price against the advertised and observed one, status, level, reliability, freshness, quarantines and the buyer policy's limits."
      )
  )
  .add(
    HttpApiEndpoint.post("outcome", "/v1/preflight/outcomes")
      .setPayload(strict(OutcomeReport))
      .addSuccess(OutcomeAnswer)
      .pipe(failsWith(NotFound, TransactionNotConfirmed, RateLimited, LedgerNotReadable))
      .middleware(ApiKeyAuth)
      .annotate(
        OpenApi.Description,
        "A buyer's report of what became of a purchase (settled, refused, delivered, not_delivered) with the transaction that paid. Taken only when the ledger shows that transaction paying the payee of a catalog entry at the URL at least its price (else 422), and stored once per transaction. Settled and delivered count as buyer payment evidence (level 3, like a receipt, once the confirmation pass rereads the ledger); refused and not_delivered are shown with the resource and move nothing. Never probe evidence."
      )
  ) {}
