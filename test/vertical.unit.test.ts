import { describe, expect, test } from "bun:test"
import { Address, Asset, Contract, Networks, nativeToScVal, xdr } from "@stellar/stellar-sdk"
import { Effect, Either, Schema } from "effect"
import { loadConfig } from "../src/config.js"
import { facilitatorUrlFor } from "../src/outbound/endpoints.js"
import { DnsFailure } from "../src/outbound/outboundGuard.js"
import { formatUnits, fromStroops, sumAmounts, toStroops } from "../src/vertical/amounts.js"
import { EligibilityBody, parseAssetRef } from "../src/vertical/assetRef.js"
import { classicChanges, contractChanges, largeThreshold, ledgerOfPagingToken } from "../src/vertical/changes.js"
import { complianceClassic, complianceContract, NO_LEGAL_CONCLUSION } from "../src/vertical/compliance.js"
import { eligibilityClassic, eligibilityContract } from "../src/vertical/eligibility.js"
import { homeDomainTarget } from "../src/vertical/homeDomain.js"
import { type AssetIdentity, classicIdentity, instanceFacts, sacClassicAsset } from "../src/vertical/identity.js"
import { currencyEntry, inspectClassic, issuerSignals } from "../src/vertical/inspect.js"
import { summarizeEvent, summarizeInstance } from "../src/vertical/sorobanXdr.js"
import { type ContractInstance, HorizonAccount, HorizonAssetStats, HorizonOperation } from "../src/vertical/upstream.js"
import {
  accounts,
  assets,
  CLAW_ISSUER,
  clawOperations,
  FROZEN_HOLDER,
  HOLDER,
  MISSING_WALLET,
  RWAB_ISSUER,
  TTF_ADMIN,
  TTF_CONTRACT
} from "./fixtures/stellarAssets.js"

/** Pure rules of the vertical, fed the same testnet-shaped JSON the fixture Horizon serves. */

const HOME = "claw.example"
const passphrase = Networks.TESTNET
const horizonAccount = (id: string) => Schema.decodeUnknownSync(HorizonAccount)(accounts(HOME).get(id))
const stats = (code: string) => Schema.decodeUnknownSync(HorizonAssetStats)(assets.find((a) => a.asset_code === code))
const operations = Schema.decodeUnknownSync(Schema.Array(HorizonOperation))(clawOperations(HOME))
const claw = classicIdentity(
  `CLAW:${CLAW_ISSUER}`,
  "stellar:testnet",
  "classic",
  { code: "CLAW", issuer: CLAW_ISSUER },
  passphrase
)

const instance = (
  storage: ReadonlyArray<readonly [unknown, unknown]>,
  executable: ContractInstance["executable"] = { type: "stellar_asset" }
): ContractInstance => ({
  executable,
  storage,
  lastModifiedLedger: 1_201_500,
  liveUntilLedger: 3_000_000
})

describe("asset references", () => {
  test("CODE:ISSUER and contract ids parse; everything else says what was expected", () => {
    expect(parseAssetRef(`CLAW:${CLAW_ISSUER}`)).toEqual(
      Either.right({ kind: "classic", code: "CLAW", issuer: CLAW_ISSUER })
    )
    expect(parseAssetRef(TTF_CONTRACT)).toEqual(Either.right({ kind: "contract", contractId: TTF_CONTRACT }))
    expect(parseAssetRef("XLM")).toEqual(
      Either.left("expected CODE:ISSUER (e.g. USDC:GBBD...) or a contract id (C...)")
    )
    expect(parseAssetRef(`CLAW:${CLAW_ISSUER}:x`)._tag).toBe("Left")
    expect(parseAssetRef(`TOOLONGCODE123:${CLAW_ISSUER}`)).toEqual(
      Either.left("the asset code must be 1 to 12 letters or digits")
    )
    expect(parseAssetRef(`CL-W:${CLAW_ISSUER}`)._tag).toBe("Left")
    expect(parseAssetRef(`CLAW:${CLAW_ISSUER.slice(0, -1)}A`)).toEqual(
      Either.left("the issuer is not a valid Stellar account (G...)")
    )
    expect(parseAssetRef(`${TTF_CONTRACT.slice(0, -1)}A`)._tag).toBe("Left")
  })

  test("an eligibility wallet must be an account, not a contract", () => {
    const decode = Schema.decodeUnknownEither(EligibilityBody)
    expect(Either.isRight(decode({ asset: `CLAW:${CLAW_ISSUER}`, wallet: HOLDER }))).toBe(true)
    expect(Either.isLeft(decode({ asset: `CLAW:${CLAW_ISSUER}`, wallet: TTF_CONTRACT }))).toBe(true)
  })
})

describe("amounts", () => {
  test("Horizon amounts convert to stroops and back without loss, and bad ones are never read as zero", () => {
    expect(toStroops("922337203685.4775807")).toBe(9223372036854775807n)
    expect(toStroops("12.5")).toBe(125000000n)
    expect(toStroops("1e5")).toBeNull()
    expect(toStroops("-1.0000000")).toBeNull()
    expect(fromStroops(125000000n)).toBe("12.5000000")
    expect(fromStroops(-1n)).toBe("-0.0000001")
    expect(formatUnits(1234n, 0)).toBe("1234")
    expect(formatUnits(1234n, 2)).toBe("12.34")
    expect(sumAmounts(["0.1000000", "0.2000000"])).toBe("0.3000000")
    expect(sumAmounts(["1.0000000", "abc"])).toBeNull()
  })

  test("the large-transfer threshold is a share of supply, and absent without a supply", () => {
    expect(largeThreshold("1000000.0000000", 0.01)).toBe(10000_0000000n)
    expect(largeThreshold("0.0000000", 0.01)).toBeNull()
    expect(largeThreshold(null, 0.01)).toBeNull()
  })
})

describe("home domains", () => {
  // A fixed resolver stands in for DNS: names map to the addresses a hostile issuer could point them at.
  const dns: Record<string, ReadonlyArray<string>> = {
    "centre.io": ["104.18.1.1"],
    "anchor.example.com": ["93.184.216.34"],
    localhost: ["127.0.0.1"],
    "svc.internal": ["10.0.0.7"],
    "rebind.example.com": ["93.184.216.34", "169.254.169.254"]
  }
  const resolve = (host: string) =>
    dns[host] ? Effect.succeed(dns[host]!) : Effect.fail(new DnsFailure({ host, reason: "ENOTFOUND" }))
  const target = (domain: string, allowPrivate: boolean) =>
    Effect.runSync(homeDomainTarget(domain, allowPrivate, resolve))

  test("public domains are fetched over https; private, loopback and metadata ones only when allowed, over http", () => {
    expect(target("centre.io", false)).toEqual({ allowHttp: false })
    expect(target("Anchor.Example.com:8443", false)).toEqual({ allowHttp: false })
    const hostile = [
      "127.0.0.1:8000",
      "localhost",
      "10.1.2.3",
      "192.168.0.1",
      "172.20.0.5",
      "169.254.169.254",
      "svc.internal",
      "2130706433",
      "0x7f.0.0.1",
      "rebind.example.com"
    ]
    for (const domain of hostile) {
      expect(target(domain, false)).toHaveProperty("skip")
      expect(target(domain, true)).toEqual({ allowHttp: true })
    }
    expect(target("172.32.0.1", false)).toEqual({ allowHttp: false })
    expect(target("evil.com/path?x", true)).toHaveProperty("skip")
    expect(target("user@evil.com", true)).toHaveProperty("skip")
    expect(target("nowhere.example", false)).toHaveProperty("skip")
  })
})

describe("facilitator", () => {
  test("by default the vertical pays through this service's own /x402, reachable even when it binds every interface", () => {
    const { vertical } = Either.getOrThrow(loadConfig(undefined, {}))
    expect(facilitatorUrlFor({ host: "127.0.0.1", port: 4020, vertical })).toBe("http://127.0.0.1:4020/x402")
    expect(facilitatorUrlFor({ host: "0.0.0.0", port: 8080, vertical })).toBe("http://127.0.0.1:8080/x402")
    expect(
      facilitatorUrlFor({
        host: "0.0.0.0",
        port: 8080,
        vertical: { ...vertical, facilitatorUrl: "https://f.example/x402" }
      })
    ).toBe("https://f.example/x402")
  })
})

describe("identity", () => {
  test("a SAC is mapped to its classic asset only when the asset's derived contract id is the SAC's", () => {
    const rwabSac = new Asset("RWAB", RWAB_ISSUER).contractId(passphrase)
    const metadata = ["METADATA", { decimal: 7, name: `RWAB:${RWAB_ISSUER}`, symbol: "RWAB" }] as const
    const admin = [["Admin"], RWAB_ISSUER] as const
    const facts = instanceFacts(instance([metadata, admin]))
    expect(facts).toEqual({ name: `RWAB:${RWAB_ISSUER}`, symbol: "RWAB", decimals: 7, admin: RWAB_ISSUER })
    expect(sacClassicAsset(rwabSac, facts, passphrase)).toEqual({ code: "RWAB", issuer: RWAB_ISSUER })
    expect(sacClassicAsset(TTF_CONTRACT, facts, passphrase)).toBeNull()
    expect(sacClassicAsset(rwabSac, facts, Networks.PUBLIC)).toBeNull()
    expect(sacClassicAsset(rwabSac, { ...facts, name: "native" }, passphrase)).toBeNull()
  })

  test("instance facts ignore storage that does not follow the common layouts", () => {
    expect(
      instanceFacts(
        instance([
          ["Admin", "not an address"],
          ["METADATA", "text"]
        ])
      )
    ).toEqual({
      name: null,
      symbol: null,
      decimals: null,
      admin: null
    })
    expect(instanceFacts(instance([["admin", TTF_ADMIN]])).admin).toBe(TTF_ADMIN)
  })

  test("Soroban XDR is reduced to plain values: executable, storage, event name, addresses and data", () => {
    const entry = xdr.LedgerEntryData.contractData(
      new xdr.ContractDataEntry({
        ext: xdr.ExtensionPoint.v0(),
        contract: new Address(TTF_CONTRACT).toScAddress(),
        key: xdr.ScVal.scvLedgerKeyContractInstance(),
        durability: xdr.ContractDataDurability.persistent,
        val: xdr.ScVal.scvContractInstance(
          new xdr.ScContractInstance({
            executable: xdr.ContractExecutable.contractExecutableWasm(Buffer.alloc(32, 1)),
            storage: [
              new xdr.ScMapEntry({
                key: xdr.ScVal.scvVec([xdr.ScVal.scvSymbol("Admin")]),
                val: new Address(TTF_ADMIN).toScVal()
              })
            ]
          })
        )
      })
    )
    const summary = summarizeInstance({
      key: new Contract(TTF_CONTRACT).getFootprint(),
      val: entry,
      lastModifiedLedgerSeq: 7
    })
    expect(summary).toEqual({
      executable: { type: "wasm", wasmHash: "01".repeat(32) },
      storage: [[["Admin"], TTF_ADMIN]],
      lastModifiedLedger: 7,
      liveUntilLedger: null
    })
    const event = summarizeEvent({
      id: "1",
      type: "contract",
      ledger: 9,
      ledgerClosedAt: "2025-06-02T00:00:00Z",
      transactionIndex: 1,
      operationIndex: 0,
      inSuccessfulContractCall: true,
      txHash: "ab",
      topic: [xdr.ScVal.scvSymbol("mint"), new Address(HOLDER).toScVal(), xdr.ScVal.scvString("TTF")],
      value: nativeToScVal({ amount: 5n }, { type: { amount: ["symbol", "i128"] } })
    })
    expect(event).toEqual({
      name: "mint",
      addresses: [HOLDER],
      value: { amount: 5n },
      ledger: 9,
      time: "2025-06-02T00:00:00Z",
      transaction: "ab"
    })
  })
})

describe("inspect", () => {
  test("supply sums every place units sit; holders count trustlines by authorisation", () => {
    const answer = inspectClassic({
      identity: claw,
      issuer: horizonAccount(CLAW_ISSUER),
      stats: stats("CLAW"),
      sac: null,
      toml: { status: "skipped", reason: "test" }
    })
    expect(answer.supply).toMatchObject({ total: "1000000.0000000", claimableBalances: "5.0000000" })
    expect(answer.holders).toMatchObject({ trustlines: 4, authorized: 3, authorizedToMaintainLiabilities: 1 })
    expect(answer.issuer?.flags).toEqual({
      authRequired: false,
      authRevocable: true,
      authClawbackEnabled: true,
      authImmutable: false
    })
    expect(answer.technical).toEqual({
      issued: true,
      contract: {
        deployed: false,
        executable: null,
        wasmHash: null,
        admin: null,
        lastModifiedLedger: null,
        liveUntilLedger: null
      }
    })
  })

  test("an asset with no trustline yet has zero supply and holders, and says so", () => {
    const answer = inspectClassic({
      identity: claw,
      issuer: horizonAccount(CLAW_ISSUER),
      stats: null,
      sac: null,
      toml: { status: "skipped", reason: "x" }
    })
    expect(answer.supply?.total).toBe("0.0000000")
    expect(answer.holders?.trustlines).toBe(0)
    expect(answer.technical.issued).toBe(false)
    expect(answer.notes.join(" ")).toContain("no trustline")
  })

  test("an issuer whose signers cannot reach the medium threshold can no longer issue", () => {
    const account = horizonAccount(CLAW_ISSUER)
    expect(issuerSignals(account).issuanceLocked).toBe(false)
    expect(
      issuerSignals({ ...account, signers: [{ key: CLAW_ISSUER, weight: 0, type: "ed25519_public_key" }] })
        .issuanceLocked
    ).toBe(true)
    expect(
      issuerSignals({ ...account, thresholds: { low_threshold: 1, med_threshold: 5, high_threshold: 5 } })
        .issuanceLocked
    ).toBe(true)
  })

  test("the stellar.toml currency entry is the one for this code and issuer, limited to SEP-1 fields", () => {
    const document = {
      CURRENCIES: [
        { code: "CLAW", issuer: RWAB_ISSUER, name: "impostor" },
        {
          code: "CLAW",
          issuer: CLAW_ISSUER,
          name: "Claw",
          is_asset_anchored: true,
          display_decimals: 2,
          secret: "x",
          nested: { a: 1 }
        }
      ]
    }
    expect(currencyEntry(document, "CLAW", CLAW_ISSUER)).toEqual({
      code: "CLAW",
      issuer: CLAW_ISSUER,
      name: "Claw",
      is_asset_anchored: true,
      display_decimals: 2
    })
    expect(currencyEntry(document, "OTHR", CLAW_ISSUER)).toBeNull()
    expect(currencyEntry({ CURRENCIES: "nope" }, "CLAW", CLAW_ISSUER)).toBeNull()
  })
})

describe("changes", () => {
  test("the issuer's operations become dated changes: flags, home domain, large mints and burns, clawbacks, deauthorisations", () => {
    const changes = classicChanges(
      { code: "CLAW", issuer: CLAW_ISSUER },
      operations,
      largeThreshold("1000000.0000000", 0.01)
    )
    expect(changes.map((c) => [c.kind, c.ledger])).toEqual([
      ["burn", 1_203_200],
      ["trustline_authorization_changed", 1_203_100],
      ["clawback", 1_203_000],
      ["mint", 1_202_500],
      ["home_domain_changed", 1_201_010],
      ["issuer_flags_changed", 1_201_010]
    ])
    expect(changes[1]?.details).toEqual({
      trustor: FROZEN_HOLDER,
      set: ["authorized_to_maintain_liabilities"],
      cleared: ["authorized"]
    })
    expect(changes[5]?.details).toEqual({ set: ["auth_revocable", "auth_clawback_enabled"], cleared: [] })
    expect(changes[3]?.time).toBe("2025-06-02T03:28:20Z")
  })

  test("without a supply every mint and burn is listed; failed transactions and other assets never are", () => {
    const changes = classicChanges({ code: "CLAW", issuer: CLAW_ISSUER }, operations, null)
    expect(changes.filter((c) => c.kind === "mint").map((c) => c.details.amount)).toEqual([
      "10.0000000",
      "50000.0000000"
    ])
    expect(changes.some((c) => c.details.amount === "90000.0000000")).toBe(false)
    expect(changes.filter((c) => c.kind === "issuer_flags_changed")).toHaveLength(1)
  })

  test("SAC balance changes in contract invocations and allow_trust count as changes of the classic asset", () => {
    const [base] = operations
    const op = (fields: Partial<HorizonOperation>): HorizonOperation => ({
      ...(base as HorizonOperation),
      transaction_successful: true,
      ...fields
    })
    const changes = classicChanges(
      { code: "CLAW", issuer: CLAW_ISSUER },
      [
        op({
          type: "invoke_host_function",
          asset_balance_changes: [
            {
              type: "mint",
              from: CLAW_ISSUER,
              to: TTF_CONTRACT,
              amount: "20000.0000000",
              asset_type: "credit_alphanum4",
              asset_code: "CLAW",
              asset_issuer: CLAW_ISSUER
            },
            {
              type: "transfer",
              from: HOLDER,
              to: TTF_CONTRACT,
              amount: "20000.0000000",
              asset_type: "credit_alphanum4",
              asset_code: "CLAW",
              asset_issuer: CLAW_ISSUER
            },
            {
              type: "clawback",
              from: HOLDER,
              amount: "1.0000000",
              asset_type: "credit_alphanum4",
              asset_code: "CLAW",
              asset_issuer: CLAW_ISSUER
            }
          ]
        }),
        op({
          type: "allow_trust",
          asset_code: "CLAW",
          asset_issuer: CLAW_ISSUER,
          trustor: HOLDER,
          authorize: false,
          authorize_to_maintain_liabilities: false
        })
      ],
      10000_0000000n
    )
    expect(changes.map((c) => c.kind)).toEqual(["mint", "clawback", "trustline_authorization_changed"])
    expect(changes[2]?.details).toEqual({ trustor: HOLDER, authorized: false, authorizedToMaintainLiabilities: false })
  })

  test("Horizon ids carry the ledger in their top 32 bits", () => {
    expect(ledgerOfPagingToken(((1_203_200n << 32n) | (2n << 12n) | 1n).toString())).toBe(1_203_200)
    expect(ledgerOfPagingToken("1203200-1")).toBeNull()
  })

  test("token events become changes whatever the SAC topic layout, newest first, with the instance change", () => {
    const changes = contractChanges(
      {
        fromLedger: 1,
        toLedger: 100,
        events: [
          { name: "mint", addresses: [TTF_ADMIN, HOLDER], value: 15n, ledger: 10, time: "t10", transaction: "a" },
          {
            name: "mint",
            addresses: [HOLDER],
            value: { amount: 5n, to_muxed_id: 7n },
            ledger: 20,
            time: "t20",
            transaction: "b"
          },
          {
            name: "set_authorized",
            addresses: [TTF_ADMIN, FROZEN_HOLDER],
            value: false,
            ledger: 30,
            time: "t30",
            transaction: "c"
          },
          {
            name: "transfer",
            addresses: [HOLDER, FROZEN_HOLDER],
            value: 1n,
            ledger: 40,
            time: "t40",
            transaction: "d"
          },
          { name: "burn", addresses: [HOLDER], value: "not an amount", ledger: 50, time: "t50", transaction: "e" }
        ]
      },
      instance([], { type: "wasm", wasmHash: "ff" }),
      "t-instance",
      1
    )
    expect(changes.map((c) => [c.kind, c.ledger])).toEqual([
      ["contract_instance_modified", 1_201_500],
      ["trustline_authorization_changed", 30],
      ["mint", 20],
      ["mint", 10]
    ])
    expect(changes[2]?.details).toEqual({ to: HOLDER, baseUnits: "5", amount: "0.5" })
    expect(changes[3]?.details).toEqual({ to: HOLDER, baseUnits: "15", amount: "1.5" })
    expect(changes[1]?.details).toEqual({ holder: FROZEN_HOLDER, authorized: false })
  })
})

describe("compliance", () => {
  const identity: AssetIdentity = { ...claw }

  test("restrictions mirror the issuer's flags and the SAC admin, with the fixed no-legal-conclusion statement", () => {
    const answer = complianceClassic(identity, horizonAccount(RWAB_ISSUER), {
      name: null,
      symbol: null,
      decimals: null,
      admin: RWAB_ISSUER
    })
    expect(answer.restrictions.map((r) => [r.name, r.present])).toEqual([
      ["authorization_required", true],
      ["clawback_enabled", false],
      ["freeze_capability", true],
      ["contract_admin", true]
    ])
    expect(answer.admin).toBe(RWAB_ISSUER)
    expect(answer.statement).toBe(NO_LEGAL_CONCLUSION)
    expect(complianceClassic(identity, horizonAccount(CLAW_ISSUER), null).restrictions.map((r) => r.present)).toEqual([
      false,
      true,
      true,
      false
    ])
  })

  test("a custom token's flags are unknown rather than absent", () => {
    const answer = complianceContract(identity, { name: "T", symbol: "T", decimals: 7, admin: null })
    expect(answer.restrictions.map((r) => r.present)).toEqual([null, null, null, null])
    expect(answer.flagsImmutable).toBeNull()
  })
})

describe("eligibility", () => {
  test("an authorised trustline with room is eligible; each failing signal is named", () => {
    const ok = eligibilityClassic(claw, HOLDER, horizonAccount(HOLDER))
    expect(ok.eligible).toBe(true)
    expect(ok.signals.map((s) => s.name)).toEqual([
      "account_exists",
      "trustline_present",
      "trustline_authorized",
      "limit_headroom"
    ])
    const frozen = eligibilityClassic(claw, FROZEN_HOLDER, horizonAccount(FROZEN_HOLDER))
    expect(frozen.eligible).toBe(false)
    expect(frozen.signals.find((s) => !s.ok)?.detail).toContain("maintain liabilities")
    const noTrustline = eligibilityClassic(claw, TTF_ADMIN, horizonAccount(TTF_ADMIN))
    expect(noTrustline.signals.map((s) => [s.name, s.ok])).toEqual([
      ["account_exists", true],
      ["trustline_present", false]
    ])
    const missing = eligibilityClassic(claw, MISSING_WALLET, null)
    expect(missing).toMatchObject({ eligible: false, balance: null, signals: [{ name: "account_exists", ok: false }] })
    const issuer = eligibilityClassic(claw, CLAW_ISSUER, horizonAccount(CLAW_ISSUER))
    expect(issuer.eligible).toBe(true)
    expect(issuer.signals.map((s) => s.name)).toContain("wallet_is_issuer")
  })

  test("a trustline at its limit cannot receive", () => {
    const account = horizonAccount(HOLDER)
    const full = { ...account, balances: account.balances.map((b) => ({ ...b, limit: b.balance })) }
    const answer = eligibilityClassic(claw, HOLDER, full)
    expect(answer.eligible).toBe(false)
    expect(answer.signals.find((s) => s.name === "limit_headroom")?.ok).toBe(false)
  })

  test("a contract token needs no trustline; its balance() answering is the evidence", () => {
    const token: AssetIdentity = {
      input: TTF_CONTRACT,
      network: "stellar:testnet",
      type: "contract_token",
      code: "TTF",
      issuer: null,
      contractId: TTF_CONTRACT
    }
    expect(eligibilityContract(token, HOLDER, horizonAccount(HOLDER), 12_345n, 2)).toMatchObject({
      eligible: true,
      balance: "123.45"
    })
    expect(eligibilityContract(token, HOLDER, horizonAccount(HOLDER), null, 2).eligible).toBe(false)
    expect(eligibilityContract(token, MISSING_WALLET, null, 0n, 2).eligible).toBe(false)
  })
})
