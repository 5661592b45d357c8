/**
 * A real `redis-server` for tests: started on a free loopback port in a temporary
 * directory, answered (`PING`) before the test goes on, stopped (and its directory
 * removed) after. `stop` and `start` stop it and start it again on the same port,
 * for tests of a server that goes away mid-run; with `persist` it keeps its data
 * across that restart (append-only file, fsync always), else it keeps nothing; with
 * `password` it requires it (`--requirepass`; `url` carries it).
 *
 * When `redis-server` is not on PATH, `redisSkip` is the reason to put in the
 * suite's name ("skipped: no redis-server") — unless `TINYAGENTS_REQUIRE_REDIS=1`
 * (CI, which installs it), where `redisRequiredButMissing` is set and the suite
 * must fail instead of skipping.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createConnection, createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** The `redis-server` on PATH, if any. */
export const redisServerPath: string | undefined = (() => {
  const found = spawnSync("/bin/sh", ["-c", "command -v redis-server"], { encoding: "utf8" })
  const path = found.stdout.trim()
  return found.status === 0 && path !== "" ? path : undefined
})()

/** Set when the machine must have redis-server (CI) and does not. */
export const redisRequiredButMissing: boolean = redisServerPath === undefined &&
  process.env["TINYAGENTS_REQUIRE_REDIS"] === "1"

/** Why Redis tests are skipped here (`undefined`: they run). */
export const redisSkip: string | undefined = redisServerPath === undefined && !redisRequiredButMissing
  ? "no redis-server"
  : undefined

export interface RedisServer {
  readonly port: number
  readonly url: string
  /** Stops the server (SIGTERM) and waits for it to exit. */
  readonly stop: () => Promise<void>
  /** Starts it again on the same port and waits until it answers. */
  readonly start: () => Promise<void>
  /** Stops it and removes its directory. */
  readonly close: () => Promise<void>
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** `true` when a server on `port` answers `PING`. */
const answers = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port })
    let reply = ""
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1_000, () => done(false))
    socket.once("error", () => done(false))
    socket.once("connect", () => socket.write("PING\r\n"))
    socket.on("data", (data) => {
      reply += data.toString("utf8")
      // a server with a password answers PING with -NOAUTH: it is up all the same
      if (reply.includes("\r\n")) done(reply.startsWith("+PONG") || reply.startsWith("-NOAUTH"))
    })
  })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Starts a `redis-server` (see the module comment); rejects when there is none or it does not answer. */
export const startRedis = async (
  options: { readonly persist?: boolean; readonly password?: string } = {}
): Promise<RedisServer> => {
  if (redisServerPath === undefined) throw new Error("redis-server is not on PATH")
  const server = redisServerPath
  const dir = mkdtempSync(join(tmpdir(), "tinyagents-redis-"))
  let port = await freePort()
  let child: ChildProcess | undefined
  const persistence = options.persist === true
    ? ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]
    : ["--appendonly", "no", "--save", ""]
  const auth = options.password === undefined ? [] : ["--requirepass", options.password]
  const launch = async (): Promise<void> => {
    const started = spawn(server, [
      "--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--daemonize", "no",
      "--protected-mode", "no", "--logfile", join(dir, "redis.log"), ...persistence, ...auth
    ], { stdio: "ignore" })
    child = started
    let exited = false
    started.once("exit", () => void (exited = true))
    for (let i = 0; i < 500; i++) {
      if (exited) throw new Error(`redis-server exited at start (port ${port})`)
      if (await answers(port)) return
      await sleep(20)
    }
    started.kill("SIGKILL")
    throw new Error(`redis-server did not answer on port ${port}`)
  }
  const stop = async (): Promise<void> => {
    const running = child
    child = undefined
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return
    await new Promise<void>((resolve) => {
      running.once("exit", () => resolve())
      running.kill("SIGTERM")
    })
  }
  // a port taken between choosing and binding: try another
  for (let attempt = 0;; attempt++) {
    try {
      await launch()
      break
    } catch (error) {
      if (attempt >= 3) {
        rmSync(dir, { recursive: true, force: true })
        throw error
      }
      port = await freePort()
    }
  }
  return {
    port,
    url: options.password === undefined
      ? `redis://127.0.0.1:${port}`
      : `redis://:${encodeURIComponent(options.password)}@127.0.0.1:${port}`,
    stop,
    start: launch,
    close: async () => {
      await stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
