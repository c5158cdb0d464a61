import { Address, StrKey, type xdr } from "@stellar/stellar-sdk"

/**
 * The four Soroban credential forms (CAP-71 added the last two). `ADDRESS` and `ADDRESS_V2` carry
 * the same fields and differ only in the signed preimage (V2 binds the address into it), so every
 * check judges them alike. Delegated and source-account credentials are refused before a backend
 * is called: the x402 reference Stellar facilitator refuses them too, and neither names a payer's
 * own signature and nonce that the ledger could be asked about.
 */
export type CredentialForm = "address" | "addressV2" | "addressWithDelegates" | "sourceAccount"

/** An address-credential authorisation: who signed, its single-use nonce, the last ledger it is valid in. */
export interface AddressAuthorization {
  readonly form: "address" | "addressV2"
  readonly address: string
  readonly nonce: bigint
  readonly expirationLedger: number
}

/**
 * The strkey of an address (G, C, M...). Accounts and contracts are encoded straight from their
 * bytes: stellar-sdk 17's `Address.fromScAddress(a).toString()` encodes, decodes and encodes again
 * (several times the work), and every settle reads five addresses. The rarer forms go through it.
 */
export const scAddressString = (address: xdr.ScAddress): string => {
  switch (address.type) {
    case "scAddressTypeAccount":
      return StrKey.encodeEd25519PublicKey(address.accountId.ed25519.toBytes())
    case "scAddressTypeContract":
      return StrKey.encodeContract(address.contractId.toBytes())
    default:
      return Address.fromScAddress(address).toString()
  }
}

/** The strkey of an address ScVal, or null for any other value. */
export const scValAddress = (value: xdr.ScVal | undefined): string | null =>
  value?.type === "scvAddress" ? scAddressString(value.address) : null

export const credentialForm = (credentials: xdr.SorobanCredentials): CredentialForm => {
  switch (credentials.type) {
    case "sorobanCredentialsAddress":
      return "address"
    case "sorobanCredentialsAddressV2":
      return "addressV2"
    case "sorobanCredentialsAddressWithDelegates":
      return "addressWithDelegates"
    case "sorobanCredentialsSourceAccount":
      return "sourceAccount"
  }
}

/** The entry's address credentials when it uses a form judged alike (`ADDRESS`, `ADDRESS_V2`); null otherwise. */
export const addressCredentials = (entry: xdr.SorobanAuthorizationEntry): xdr.SorobanAddressCredentials | null => {
  const credentials = entry.credentials
  if (credentials.type === "sorobanCredentialsAddress") return credentials.address
  if (credentials.type === "sorobanCredentialsAddressV2") return credentials.addressV2
  return null
}

export const addressAuthorization = (entry: xdr.SorobanAuthorizationEntry): AddressAuthorization | null => {
  const signed = addressCredentials(entry)
  if (signed === null) return null
  return {
    form: entry.credentials.type === "sorobanCredentialsAddressV2" ? "addressV2" : "address",
    address: scAddressString(signed.address),
    nonce: signed.nonce,
    expirationLedger: signed.signatureExpirationLedger
  }
}

/** Every address-credential authorisation among `auth`, in order. */
export const addressAuthorizations = (
  auth: ReadonlyArray<xdr.SorobanAuthorizationEntry>
): ReadonlyArray<AddressAuthorization> =>
  auth.flatMap((entry) => {
    const found = addressAuthorization(entry)
    return found === null ? [] : [found]
  })

/** The first entry whose form is refused (delegated or source-account credentials), or null. */
export const refusedForm = (
  auth: ReadonlyArray<xdr.SorobanAuthorizationEntry>
): "addressWithDelegates" | "sourceAccount" | null => {
  for (const entry of auth) {
    const form = credentialForm(entry.credentials)
    if (form === "addressWithDelegates" || form === "sourceAccount") return form
  }
  return null
}
