import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type FixtureFacilitator, startFacilitator } from "../fixtures/facilitator.js"
import { startPaidResource } from "../fixtures/paidResource.js"
import { seededBuyer, settleBody, signedPayment } from "../fixtures/stellarPayment.js"
import { LOOPBACK, pollUntil } from "./poll.js"
import { SELLER_PAY_TO, SELLER_RESOURCE_ID } from "./sellerStack.js"
import { launchServe, type ServeChild, serveArgv } from "./serveProcess.js"
import { NO_LEDGER, request } from "./server.js"

/**
 * A seller's paid resource, the fixture facilitator it and the service both use, and `sextant
 * serve` as its own process (as `npm start` runs it) in a folder that outlives restarts: what the
 * tests of shutdown, crashes and redaction (and `npm run soak`) settle real payments through. The
 * in-process twin is `sellerStack.ts`; this one exists for what only a process shows (signals,
 * SIGKILL, its log and files). Every address is on loopback; the ledger is a closed port.
 */
export const startSellerProcess = async (
  extraConfig: Record<string, unknown> = {},
  backendOptions: { readonly apiKey?: string } = {}
) => {
  const backend: FixtureFacilitator = startFacilitator()
  const resource = startPaidResource({ payTo: SELLER_PAY_TO, amount: "10000" })
  // The resource asks the fixture directly, so its 402 does not depend on the service being up.
  await resource.useFacilitator(backend.url)
  const dir = mkdtempSync(join(tmpdir(), "sextant-seller-"))
  const database = join(dir, "sextant.db")
  const configFile = join(dir, "config.json")
  writeFileSync(
    configFile,
    JSON.stringify({
      host: "127.0.0.1",
      port: 0,
      database,
      facilitators: [
        {
          id: "fixture",
          url: backend.url,
          ...(backendOptions.apiKey === undefined ? {} : { apiKey: backendOptions.apiKey })
        }
      ],
      facilitatorPollSeconds: 0.5,
      catalog: [resource.catalogEntry(SELLER_RESOURCE_ID)],
      probes: { allowPrivateTargets: true, intervalSeconds: 86400 },
      vertical: { enabled: false },
      signer: { ed25519KeyFile: join(dir, "signer.key") },
      ledger: { sorobanRpcUrl: NO_LEDGER, horizonUrl: NO_LEDGER },
      ...extraConfig
    })
  )
  const children: Array<ServeChild> = []
  let launches = 0

  /** Starts serve on the folder's config and store; resolves once its facilitator is known. */
  const launch = async () => {
    const child = await launchServe(serveArgv(configFile), { logFile: join(dir, `serve-${++launches}.log`) })
    children.push(child)
    await pollUntil(
      "the service knows its facilitator",
      async () => (await request(`${child.url}/health/ready`)).status,
      (s) => s === 200,
      LOOPBACK
    )
    return child
  }

  /** Probes the resource once, so its payee has the evidence a settle needs. */
  const validate = async (child: ServeChild) => {
    const probe = await request(`${child.url}/v1/validate`, {
      method: "POST",
      json: { resourceId: SELLER_RESOURCE_ID }
    })
    if (probe.body.healthy !== true)
      throw new Error(`the seller's resource did not probe healthy: ${JSON.stringify(probe.body)}`)
  }

  /** A settle body for a payment of the resource signed by buyer number `seed`. */
  const settleBodyFor = async (seed: number) => {
    const { requirements, payment } = await signedPayment(SELLER_PAY_TO, { buyer: seededBuyer(seed) })
    return settleBody(payment, requirements)
  }

  const stop = async () => {
    await Promise.all(children.map((c) => c.kill()))
    await backend.stop()
    await resource.stop()
    rmSync(dir, { recursive: true, force: true })
  }

  return { backend, resource, dir, database, configFile, launch, validate, settleBodyFor, stop }
}
export type SellerProcess = Awaited<ReturnType<typeof startSellerProcess>>

/** The transaction (base64 XDR) of each settle a fixture received: one per payment forwarded. */
export const forwardedPayments = (backend: FixtureFacilitator): Array<string> =>
  backend.requests
    .filter((r) => r.path === "/settle")
    .map((r) =>
      String(
        (r.body as { paymentPayload?: { payload?: { transaction?: string } } })?.paymentPayload?.payload?.transaction
      )
    )
