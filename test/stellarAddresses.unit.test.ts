import { describe, expect, test } from "bun:test"
import { Account, Address, MuxedAccount, nativeToScVal, StrKey } from "@stellar/stellar-sdk"
import fc from "fast-check"
import { scAddressString, scValAddress } from "../src/ledger/authEntries.js"

const key = fc.uint8Array({ minLength: 32, maxLength: 32 })

/** What stellar-sdk itself makes of an address: the direct encoding must never differ from it. */
const sdkString = (address: Address) => Address.fromScAddress(address.toScAddress()).toString()

describe("addresses read from XDR", () => {
  test("an account's and a contract's strkey are the SDK's own, for any key", () => {
    fc.assert(
      fc.property(key, key, (account, contract) => {
        const g = Address.account(Buffer.from(account))
        const c = Address.contract(Buffer.from(contract))
        expect(scAddressString(g.toScAddress())).toBe(sdkString(g))
        expect(scAddressString(c.toScAddress())).toBe(sdkString(c))
        expect(scValAddress(c.toScVal())).toBe(StrKey.encodeContract(Buffer.from(contract)))
      })
    )
  })

  test("a muxed account keeps its id (it goes through the SDK)", () => {
    const base = new Account(StrKey.encodeEd25519PublicKey(Buffer.alloc(32, 9)), "0")
    const muxed = new MuxedAccount(base, "42").accountId()
    expect(scAddressString(new Address(muxed).toScAddress())).toBe(muxed)
  })

  test("a value that is not an address reads as none", () => {
    expect(scValAddress(nativeToScVal(5, { type: "u32" }))).toBeNull()
    expect(scValAddress(nativeToScVal("GABC", { type: "symbol" }))).toBeNull()
    expect(scValAddress(undefined)).toBeNull()
  })
})
