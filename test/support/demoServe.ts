import { join } from "node:path"
import { pollUntil } from "./poll.js"
import { freePorts, type ServeProcess, spawnServe } from "./serveProcess.js"
import { NO_LEDGER, request } from "./server.js"

/** Each demo provider's standing once its behaviour has shown (README "Demo providers"). */
export const EXPECTED_STANDINGS = {
  "stellar-intel": "PAYMENT_VERIFIED",
  "demo-fast": "PAYMENT_VERIFIED",
  "demo-slow": "PAYMENT_VERIFIED",
  "demo-flaky": "DEGRADED",
  "demo-raiser": "QUARANTINED"
} as const

/** Resources of the bundled demo catalog: 20 HTTP endpoints and 5 MCP tools (the vertical's four, demo-fast's inspect). */
export const DEMO_RESOURCES = 25

/** Timings that let the demo show every behaviour within seconds instead of minutes. */
export const FAST_DEMO = { slowDelayMs: 250, priceRaiseAfterSeconds: 3 }

export interface DemoServe {
  readonly service: ServeProcess
  readonly ports: {
    readonly vertical: number
    readonly fast: number
    readonly slow: number
    readonly flaky: number
    readonly raiser: number
  }
}

/**
 * `sextant serve` as `npm start` runs it: no catalog configured, so the bundled demo catalog and
 * the demo providers beside the vertical, the default trusted origins. Moved onto free ports and
 * a temporary folder, probing every second, with `FAST_DEMO` timings. Horizon, Soroban RPC and
 * the ledger are a closed loopback port: nothing leaves the machine.
 */
export const spawnDemoServe = async (): Promise<DemoServe> => {
  const [vertical, fast, slow, flaky, raiser] = freePorts(5) as [number, number, number, number, number]
  const service = await spawnServe((dir) => ({
    host: "127.0.0.1",
    database: join(dir, "sextant.db"),
    signer: { ed25519KeyFile: join(dir, "signer.key") },
    probes: { intervalSeconds: 1 },
    vertical: { port: vertical, horizonUrl: NO_LEDGER, sorobanRpcUrl: NO_LEDGER },
    ledger: { sorobanRpcUrl: NO_LEDGER, horizonUrl: NO_LEDGER, pollIntervalSeconds: 0.2 },
    demo: { ports: { fast, slow, flaky, raiser }, ...FAST_DEMO }
  }))
  return { service, ports: { vertical, fast, slow, flaky, raiser } }
}

export interface Listed {
  readonly resource: { readonly id: string; readonly status: string; readonly verificationLevel: number }
  readonly provider: { readonly id: string; readonly name: string }
}

export const listed = async (service: ServeProcess): Promise<ReadonlyArray<Listed>> =>
  (await request(`${service.url}/v1/resources`)).body.resources

/** Waits until every resource of every provider in `EXPECTED_STANDINGS` has its expected status. */
export const waitForStandings = (service: ServeProcess, timeoutMs = 20_000) =>
  pollUntil(
    "every demo provider reaches its expected standing",
    async () => (await listed(service)).map((r) => [r.resource.id, r.resource.status] as const),
    (found) =>
      found.length === DEMO_RESOURCES &&
      found.every(([id, status]) => EXPECTED_STANDINGS[id.split(".")[0] as keyof typeof EXPECTED_STANDINGS] === status),
    { timeoutMs, everyMs: 100 }
  )
