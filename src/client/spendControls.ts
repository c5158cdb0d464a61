import { DEFAULT_MAX_AMOUNT_PER_PAYMENT } from "@x402/core/client"
import { parseMoney } from "@x402/core/utils"

/**
 * The per-payment cap of a stock x402 2.27 client's `spendControls` when none is configured
 * ("$1"), in USD. Read from @x402/core itself, so the buyer moves with upstream's default.
 */
export const DEFAULT_MAX_USD_PER_PAYMENT = Number(parseMoney(DEFAULT_MAX_AMOUNT_PER_PAYMENT).amount)

/**
 * Upstream's `spendControls.maxAmountPerPayment` as this buyer reads it: `--max-usd` (or the
 * request's `maxUsd`) when given, at any value, else upstream's default. The policy's own price
 * per request may only lower it.
 */
export const perPaymentCapUsd = (maxUsd: number | undefined): number => maxUsd ?? DEFAULT_MAX_USD_PER_PAYMENT
