import { writeFileSync } from "node:fs"
import { join } from "node:path"

/**
 * A config file for the service, `sextant buy` and `sextant mcp` of one test folder: its store and
 * signer key in `folder`, no vertical or demo, the fixture ledger, `catalog` and `buyer` as given.
 */
export const writeBuyerConfig = (
  path: string,
  folder: string,
  ledger: { readonly rpcUrl: string; readonly horizonUrl: string },
  catalog: ReadonlyArray<unknown>,
  buyer: Record<string, unknown>
) =>
  writeFileSync(
    path,
    JSON.stringify({
      database: join(folder, "sextant.db"),
      signer: { ed25519KeyFile: join(folder, "signer.key") },
      probes: { allowPrivateTargets: true, intervalSeconds: 86400 },
      vertical: { enabled: false },
      demo: { enabled: false },
      ledger: { sorobanRpcUrl: ledger.rpcUrl, horizonUrl: ledger.horizonUrl },
      catalog,
      buyer
    })
  )
