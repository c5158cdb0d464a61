import type {
  AssetAmount,
  Network,
  PaymentRequirements,
  Price,
  SchemeNetworkServer,
  SupportedKind
} from "@x402/core/types"
import { convertToTokenAmount, parseMoney } from "@x402/core/utils"
import { TESTNET_USDC } from "../config.js"

/**
 * The resource-server side of Stellar `exact` (price -> requirements), written against
 * @x402/core 2.27. `@x402/stellar` 2.9 ships the same logic but pins core 2.9, and its scheme
 * object lacks the `paymentFlows` table a 2.27 resource server reads at build time, so it cannot
 * be registered here. test/stellarServerScheme.unit.test.ts holds both sides equal on prices.
 */

/** Circle's USDC SEP-41 contract on mainnet; the testnet one is `TESTNET_USDC`. */
export const PUBNET_USDC = "CCW67TSZV3SSS2HXMBQ5JFGCKJNXKZM7UQUWUZPUTHXSTZLEO7SJMI75"
const USDC_DECIMALS = 7

const USDC: Readonly<Record<string, string>> = { "stellar:testnet": TESTNET_USDC, "stellar:pubnet": PUBNET_USDC }

const usdcOf = (network: Network): string => {
  const usdc = USDC[network]
  if (usdc === undefined) throw new Error(`no USDC contract is known for network ${network}`)
  return usdc
}

const parsePrice = async (price: Price, network: Network): Promise<AssetAmount> => {
  if (typeof price === "object" && price !== null && "amount" in price) {
    if (!price.asset) throw new Error(`an AssetAmount on ${network} must name its asset`)
    return { amount: price.amount, asset: price.asset, extra: price.extra ?? {} }
  }
  const money = parseMoney(price)
  if (money.symbol !== undefined && money.symbol !== "USDC")
    throw new Error(`a Stellar price is in USD or USDC, not ${money.symbol}`)
  return { amount: convertToTokenAmount(money.amount, USDC_DECIMALS), asset: usdcOf(network), extra: {} }
}

/** The facilitator's fee sponsorship, announced in `/supported`, is what a buyer must know. */
const enhancePaymentRequirements = async (
  requirements: PaymentRequirements,
  kind: SupportedKind
): Promise<PaymentRequirements> => {
  const sponsored = kind.extra?.areFeesSponsored
  return {
    ...requirements,
    extra: { ...requirements.extra, ...(typeof sponsored === "boolean" ? { areFeesSponsored: sponsored } : {}) }
  }
}

/**
 * A Stellar scheme server under `scheme`. `exact` is the x402 one; `upto` (a ceiling the buyer
 * authorises, which the specs define for EVM only) is priced the same way, `amount` the ceiling.
 * One signed transfer, verified before the handler and broadcast after it: the `authorization`
 * flow, with no on-wire transfer-method choice (core's "default").
 */
export const stellarServerScheme = (scheme: "exact" | "upto"): SchemeNetworkServer => ({
  scheme,
  defaultAssetTransferMethod: "default",
  paymentFlows: { default: { supported: ["authorization"], default: "authorization" } },
  parsePrice,
  getAssetDecimals: (asset, network) => (asset === USDC[network] ? USDC_DECIMALS : undefined),
  enhancePaymentRequirements
})
