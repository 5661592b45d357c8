/**
 * Postgres servers for tests: PGlite (Postgres in WASM, in this process) served on a loopback
 * socket, always available; and a real `postgres` cluster in a temporary directory on a free
 * loopback port, when the machine has the binaries (`postgresSkipReason` says why not otherwise).
 * As root, the real server runs as the `postgres` (or `nobody`) user, since postgres refuses root.
 *
 * Limitation: PGlite is ONE Postgres session behind its socket: the statements of several client
 * connections interleave in it, so two transactions at once (concurrent `modify`s, each a
 * `SELECT ... FOR UPDATE` then a write in one transaction) break each other. Tests against PGlite
 * use a pool of one connection (`maxConnections: 1`); what needs real concurrent transactions (the
 * conformance suite's parallel modifies of one key, with a pool of 4) is tested on the real server.
 */
import { execFileSync } from "node:child_process"
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** A free loopback TCP port. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** A PGlite database served on a loopback port. */
export interface PgliteServer {
  readonly url: string
  readonly port: number
  readonly stop: () => Promise<void>
}

/** Starts PGlite in this process and serves it on a free loopback port. */
export const startPglite = async (): Promise<PgliteServer> => {
  const { PGlite } = await import("@electric-sql/pglite")
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket")
  const db = await PGlite.create()
  const port = await freePort()
  const server = new PGLiteSocketServer({ db, port, host: "127.0.0.1", maxConnections: 16 })
  await server.start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop: async () => {
      await server.stop()
      await db.close()
    }
  }
}

/** The directory holding `postgres`, `initdb` and `pg_ctl`, if the machine has them. */
export const postgresBinDir = (): string | undefined => {
  const candidates = [
    process.env["TINYAGENTS_PG_BIN"],
    ...(existsSync("/usr/lib/postgresql")
      ? readdirSync("/usr/lib/postgresql").sort().reverse().map((v) => `/usr/lib/postgresql/${v}/bin`)
      : []),
    "/usr/local/bin",
    "/usr/bin"
  ]
  return candidates.find((dir) =>
    dir !== undefined && ["postgres", "initdb", "pg_ctl"].every((bin) => existsSync(join(dir, bin)))
  )
}

/** Why real-Postgres tests are skipped on this machine (`undefined`: they run). */
export const postgresSkipReason: string | undefined = (() => {
  if (postgresBinDir() !== undefined) return undefined
  // CI installs PostgreSQL and sets this: there a missing server fails the run instead of skipping tests.
  if (process.env["TINYAGENTS_REQUIRE_POSTGRES"] === "1") {
    throw new Error("TINYAGENTS_REQUIRE_POSTGRES=1 but no postgres, initdb and pg_ctl were found (set TINYAGENTS_PG_BIN)")
  }
  return "no postgres on this machine (set TINYAGENTS_PG_BIN to its bin directory)"
})()

/** A real Postgres cluster in a temporary directory; `stop` and `start` it to test a server restart (each a no-op when already so). */
export interface PostgresServer {
  readonly url: string
  readonly port: number
  readonly stop: () => void
  readonly start: () => void
  readonly destroy: () => void
}

/** The user to run postgres as: ourselves, or (as root) `postgres` / `nobody`. */
const runAs = (): { readonly prefix: ReadonlyArray<string>; readonly uid?: number } => {
  if (process.getuid?.() !== 0) return { prefix: [] }
  const passwd = execFileSync("getent", ["passwd", "postgres"], { encoding: "utf8" }).trim() ||
    execFileSync("getent", ["passwd", "nobody"], { encoding: "utf8" }).trim()
  const [user, , uid] = passwd.split(":")
  return { prefix: ["runuser", "-u", user!, "--"], uid: Number(uid) }
}

/**
 * Initialises a cluster in a temporary directory and starts it on a free loopback port. With
 * `password`, connections must give it (password authentication, `url` carries it); without, any is let in.
 */
export const startPostgres = async (options: { readonly password?: string } = {}): Promise<PostgresServer> => {
  const bin = postgresBinDir()
  if (bin === undefined) throw new Error(postgresSkipReason)
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), "tinyagents-pg-"))
  const user = runAs()
  if (user.uid !== undefined) chownSync(dir, user.uid, -1)
  const run = (command: string, args: ReadonlyArray<string>) => {
    const [exe, ...rest] = [...user.prefix, join(bin, command), ...args]
    execFileSync(exe!, rest, { stdio: "pipe" })
  }
  const data = join(dir, "data")
  if (options.password === undefined) run("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"])
  else {
    const pwfile = join(dir, "pwfile")
    writeFileSync(pwfile, `${options.password}\n`)
    if (user.uid !== undefined) chownSync(pwfile, user.uid, -1)
    run("initdb", ["-D", data, "-A", "scram-sha-256", "-U", "postgres", "--pwfile", pwfile, "--no-sync"])
  }
  let running = false
  const start = () => {
    if (running) return
    run("pg_ctl", ["-D", data, "-o", `-p ${port} -h 127.0.0.1 -k ${dir} -F`, "-l", join(dir, "log"), "-w", "start"])
    running = true
  }
  const stop = () => {
    if (!running) return
    run("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"])
    running = false
  }
  start()
  return {
    url: options.password === undefined
      ? `postgres://postgres@127.0.0.1:${port}/postgres`
      : `postgres://postgres:${encodeURIComponent(options.password)}@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop,
    destroy: () => {
      try {
        stop()
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
