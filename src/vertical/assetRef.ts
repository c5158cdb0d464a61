import { Asset, StrKey } from "@stellar/stellar-sdk"
import { Either, ParseResult, Schema } from "effect"

/** What a buyer names: an issued asset (`CODE:ISSUER`) or a Soroban token contract (`C...`). */
export type AssetRef =
  | { readonly kind: "classic"; readonly code: string; readonly issuer: string }
  | { readonly kind: "contract"; readonly contractId: string }

export const formatAssetRef = (ref: AssetRef): string =>
  ref.kind === "classic" ? `${ref.code}:${ref.issuer}` : ref.contractId

/**
 * Parses the `asset` field. The SDK's `Asset` constructor is the judge of a code (1 to 12
 * alphanumerics) and an issuer (G... with a valid checksum); `StrKey` judges contract ids.
 */
export const parseAssetRef = (input: string): Either.Either<AssetRef, string> => {
  if (StrKey.isValidContract(input)) return Either.right({ kind: "contract", contractId: input })
  const parts = input.split(":")
  if (parts.length !== 2) {
    return Either.left("expected CODE:ISSUER (e.g. USDC:GBBD...) or a contract id (C...)")
  }
  const [code = "", issuer = ""] = parts
  if (!StrKey.isValidEd25519PublicKey(issuer)) return Either.left("the issuer is not a valid Stellar account (G...)")
  try {
    const asset = new Asset(code, issuer)
    return Either.right({ kind: "classic", code: asset.getCode(), issuer })
  } catch {
    return Either.left("the asset code must be 1 to 12 letters or digits")
  }
}

export const AssetRefFromString = Schema.transformOrFail(
  Schema.String,
  Schema.Union(
    Schema.Struct({ kind: Schema.Literal("classic"), code: Schema.String, issuer: Schema.String }),
    Schema.Struct({ kind: Schema.Literal("contract"), contractId: Schema.String })
  ),
  {
    strict: true,
    decode: (input, _, ast) =>
      Either.mapLeft(parseAssetRef(input), (message) => new ParseResult.Type(ast, input, message)),
    encode: (ref) => ParseResult.succeed(formatAssetRef(ref))
  }
)

export const AccountId = Schema.String.pipe(
  Schema.filter((s) => StrKey.isValidEd25519PublicKey(s), {
    message: () => "expected a Stellar account (G...) with a valid checksum"
  })
)

export const AssetBody = Schema.Struct({ asset: AssetRefFromString })
export type AssetBody = typeof AssetBody.Type

export const EligibilityBody = Schema.Struct({ asset: AssetRefFromString, wallet: AccountId })
export type EligibilityBody = typeof EligibilityBody.Type
