import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { freePorts } from "./serveProcess.js"

/**
 * Throwaway PostgreSQL clusters for tests: `initdb` into a temp folder, `pg_ctl start` on a free
 * loopback port with trust auth, `stop()` removes it all. Nothing here listens beyond 127.0.0.1.
 */

/** Where the server binaries are: `initdb` on PATH, else the newest /usr/lib/postgresql/<v>/bin. */
const findBinDir = (): string | null => {
  const onPath = Bun.which("initdb")
  if (onPath !== null) return dirname(realpathSync(onPath))
  const root = "/usr/lib/postgresql"
  if (!existsSync(root)) return null
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a))
  return versions[0] === undefined ? null : join(root, versions[0], "bin")
}

/** initdb refuses to run as root: then the cluster belongs to the `postgres` system user. */
const systemUser = (): { readonly uid: number; readonly gid: number } | null => {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith("postgres:"))
  const [, , uid, gid] = line?.split(":") ?? []
  return uid === undefined || gid === undefined ? null : { uid: Number(uid), gid: Number(gid) }
}

const isRoot = process.getuid?.() === 0

export type PostgresAvailability =
  | { readonly available: true; readonly binDir: string }
  | { readonly available: false; readonly reason: string }

/** Whether this machine can start a cluster, and if not, why (for the skip message). */
export const postgresAvailability = (): PostgresAvailability => {
  const binDir = findBinDir()
  if (binDir === null || !existsSync(join(binDir, "pg_ctl"))) {
    return { available: false, reason: "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or under /usr/lib/postgresql/*/bin" }
  }
  if (isRoot && systemUser() === null) {
    return { available: false, reason: "running as root and there is no `postgres` system user to own the cluster" }
  }
  return { available: true, binDir }
}

const run = (command: ReadonlyArray<string>) => {
  const argv = isRoot ? ["runuser", "-u", "postgres", "--", ...command] : [...command]
  const result = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" })
  if (result.exitCode !== 0) {
    throw new Error(`${command.join(" ")} exited ${result.exitCode}: ${result.stderr.toString()}${result.stdout.toString()}`)
  }
}

/** One statement on its own short-lived connection, as a client outside the service would run it. */
export const pgQuery = <A extends object = Record<string, unknown>>(url: string, text: string) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text)).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(url) })),
      Effect.scoped
    )
  )

export interface PostgresCluster {
  /** Creates a fresh database and answers its URL, `postgres://postgres@127.0.0.1:<port>/<name>`. */
  readonly createDatabase: (name: string) => Promise<string>
  readonly stop: () => Promise<void>
}

export const startPostgres = async (): Promise<PostgresCluster> => {
  const availability = postgresAvailability()
  if (!availability.available) throw new Error(availability.reason)
  const bin = (name: string) => join(availability.binDir, name)
  const folder = mkdtempSync(join(tmpdir(), "sextant-pg-"))
  const user = systemUser()
  if (isRoot && user !== null) chownSync(folder, user.uid, user.gid)
  const data = join(folder, "data")
  const sockets = join(folder, "sockets")
  mkdirSync(sockets)
  if (isRoot && user !== null) chownSync(sockets, user.uid, user.gid)
  const log = join(folder, "server.log")
  /** Starts the server on `port`; a failure carries the server's own log, which says why. */
  const startOn = (port: number) => {
    // fsync off: the cluster is deleted when the tests end, so crash safety buys nothing here.
    const options = `-c listen_addresses=127.0.0.1 -c port=${port} -k ${sockets} -c fsync=off -c full_page_writes=off`
    try {
      run([bin("pg_ctl"), "-D", data, "-l", log, "-w", "-t", "30", "-o", options, "start"])
    } catch (error) {
      throw new Error(`${String(error)}\n${existsSync(log) ? readFileSync(log, "utf8") : ""}`)
    }
  }
  const port = (() => {
    try {
      // Trust for local and 127.0.0.1 connections: the cluster lives as long as one test file.
      run([bin("initdb"), "-D", data, "-U", "postgres", "--auth-local=trust", "--auth-host=trust", "-E", "UTF8", "--no-sync"])
      // A free port may be taken between asking and binding; another one is tried then.
      for (let attempt = 1; ; attempt++) {
        const candidate = freePorts(1)[0]!
        try {
          startOn(candidate)
          return candidate
        } catch (error) {
          if (attempt === 3) throw error
        }
      }
    } catch (error) {
      rmSync(folder, { recursive: true, force: true })
      throw error
    }
  })()

  const urlFor = (name: string) => `postgres://postgres@127.0.0.1:${port}/${name}`
  return {
    createDatabase: async (name) => {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`)
      await pgQuery(urlFor("postgres"), `CREATE DATABASE ${name}`)
      return urlFor(name)
    },
    stop: async () => {
      try {
        run([bin("pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"])
      } finally {
        rmSync(folder, { recursive: true, force: true })
      }
    }
  }
}
