import { formatUnits, fromStroops, toStroops } from "./amounts.js"
import type { AssetIdentity, ClassicIdentity } from "./identity.js"
import type { BalanceLine, HorizonAccount } from "./upstream.js"

export type SignalName =
  | "account_exists"
  | "wallet_is_issuer"
  | "trustline_present"
  | "trustline_authorized"
  | "limit_headroom"
  | "trustline_not_required"
  | "balance_readable"

export interface Signal {
  readonly name: SignalName
  readonly ok: boolean
  readonly detail: string
}

export interface EligibilityAnswer {
  readonly asset: AssetIdentity
  readonly wallet: string
  /** The wallet can hold and receive the asset now: every signal is ok. */
  readonly eligible: boolean
  readonly signals: ReadonlyArray<Signal>
  readonly balance: string | null
  readonly limit: string | null
}

const answer = (
  identity: AssetIdentity,
  wallet: string,
  signals: ReadonlyArray<Signal>,
  balance: string | null,
  limit: string | null
): EligibilityAnswer => ({ asset: identity, wallet, eligible: signals.every((s) => s.ok), signals, balance, limit })

const accountSignal = (account: HorizonAccount | null): Signal =>
  account
    ? { name: "account_exists", ok: true, detail: "the account exists on the ledger" }
    : { name: "account_exists", ok: false, detail: "no such account: it must be created (funded with XLM) first" }

const trustlineSignals = (line: BalanceLine): ReadonlyArray<Signal> => {
  const headroom = (() => {
    const limit = toStroops(line.limit ?? "")
    const balance = toStroops(line.balance)
    return limit === null || balance === null ? null : limit - balance
  })()
  return [
    { name: "trustline_present", ok: true, detail: `a trustline exists with limit ${line.limit ?? "unknown"}` },
    line.is_authorized === true
      ? { name: "trustline_authorized", ok: true, detail: "the issuer has authorised the trustline" }
      : line.is_authorized_to_maintain_liabilities === true
        ? {
            name: "trustline_authorized",
            ok: false,
            detail: "authorised to maintain liabilities only: the balance can be held but not increased"
          }
        : {
            name: "trustline_authorized",
            ok: false,
            detail: "the trustline is not authorised by the issuer (frozen or pending approval)"
          },
    headroom !== null && headroom > 0n
      ? { name: "limit_headroom", ok: true, detail: `room to receive up to ${fromStroops(headroom)} more` }
      : { name: "limit_headroom", ok: false, detail: "the balance has reached the trustline limit" }
  ]
}

/** Issued assets (including a SAC named by contract id): the holder needs an authorised trustline with room. */
export const eligibilityClassic = (
  identity: ClassicIdentity,
  wallet: string,
  account: HorizonAccount | null
): EligibilityAnswer => {
  if (!account) return answer(identity, wallet, [accountSignal(null)], null, null)
  if (wallet === identity.issuer) {
    return answer(
      identity,
      wallet,
      [
        accountSignal(account),
        {
          name: "wallet_is_issuer",
          ok: true,
          detail: "the issuer holds its own asset without a trustline, in unlimited amount"
        }
      ],
      null,
      null
    )
  }
  const line = account.balances.find((b) => b.asset_code === identity.code && b.asset_issuer === identity.issuer)
  if (!line) {
    return answer(
      identity,
      wallet,
      [
        accountSignal(account),
        { name: "trustline_present", ok: false, detail: "no trustline to this asset: the wallet must add one" }
      ],
      null,
      null
    )
  }
  return answer(identity, wallet, [accountSignal(account), ...trustlineSignals(line)], line.balance, line.limit ?? null)
}

/**
 * Custom contract tokens keep balances in contract storage, so no trustline is involved; the
 * token's own `balance(wallet)` answering is the evidence that it accepts this holder.
 */
export const eligibilityContract = (
  identity: AssetIdentity,
  wallet: string,
  account: HorizonAccount | null,
  balance: bigint | null,
  decimals: number | null
): EligibilityAnswer => {
  const shown = balance === null ? null : decimals === null ? balance.toString() : formatUnits(balance, decimals)
  return answer(
    identity,
    wallet,
    [
      accountSignal(account),
      { name: "trustline_not_required", ok: true, detail: "a contract token needs no trustline" },
      balance === null
        ? {
            name: "balance_readable",
            ok: false,
            detail: "the token's balance() could not be evaluated for this wallet"
          }
        : { name: "balance_readable", ok: true, detail: `balance() returns ${shown}` }
    ],
    shown,
    null
  )
}
