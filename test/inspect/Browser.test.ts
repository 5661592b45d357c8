/**
 * The inspector in a real browser (full tier): Debian's chromium driven by playwright-core loads
 * the page for `npm start`'s recorded runs (opened with the command it prints, the real binary), a
 * recorded run (JSONL), a live one (`layerLive`, events arriving while the page is
 * open) and a durable journal, and checks what a person sees: the calls, a refusal's message, a
 * redacted value shown redacted, an approval decided from the page reaching the durable run. It
 * takes the screenshots docs/inspect.md shows: into a temporary folder, or over
 * docs/images/inspect-*.png when TINYAGENTS_UPDATE_SCREENSHOTS=1 (so a test run leaves the tree
 * clean). Without
 * /usr/bin/chromium: "skipped: no chromium" (a failure when TINYAGENTS_REQUIRE_CHROMIUM=1).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Result, Schedule, Schema, Stream } from "effect"
import { spawn, spawnSync } from "node:child_process"
import { createServer } from "node:http"
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll } from "vitest"
import * as ChatModel from "../../src/agent/ChatModel.ts"
import * as Tool from "../../src/contract/Tool.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import { Inspector, layerLive, Server, Sources } from "../../src/cli/inspect/index.ts"
import { Agent, Ask, ToolServices } from "../../src/index.ts"
import { Stores } from "../../src/stores/index.ts"
import { record, secrets } from "./fixtures.ts"
import { hostile, hostileRunId, recordHostile } from "./hostileRun.ts"

const chromium = "/usr/bin/chromium"
const present = existsSync(chromium)
if (!present && process.env["TINYAGENTS_REQUIRE_CHROMIUM"] === "1") throw new Error(`TINYAGENTS_REQUIRE_CHROMIUM=1 but ${chromium} is missing`)
if (!present) console.log("skipped: no chromium")

const dir = mkdtempSync(join(tmpdir(), "tinyagents-inspect-browser-"))
const events = join(dir, "events.jsonl")
const hostileEvents = join(dir, "hostile.jsonl")
const demoEvents = join(dir, "demo.jsonl")
const journalDb = join(dir, "journal.db")
const asksDb = join(dir, "asks.db")
const images = process.env["TINYAGENTS_UPDATE_SCREENSHOTS"] === "1"
  ? join(import.meta.dirname, "..", "..", "docs", "images")
  : join(dir, "images")

const send = Tool.make("send", {
  description: "Sends a message.",
  input: Schema.Struct({ to: Schema.String, body: Schema.String }),
  safety: { access: "write", redact: { keys: ["to"] } },
  handler: ({ body }) => Effect.succeed(`sent ${body}`)
})
const mailer = DurableAgent.make({ name: "mailer", tools: Result.getOrThrow(ToolRegistry.makeResult([send])), approval: () => true, pollInterval: "20 millis" })
const mailModel = ChatModel.fromFunction((request) =>
  Effect.succeed(
    request.messages.some((m) => m.role === "tool")
      ? ChatModel.answer("Both sent.")
      : ChatModel.callTools([
        ["c1", "send", { to: "alice@example.com", body: "Q3 report" }],
        ["c2", "send", { to: "bob@example.com", body: "Q3 figures" }]
      ], "Sending the report to both.")
  )
)
const runner = Layer.mergeAll(mailer.layer).pipe(
  Layer.provide([mailModel, Stores.layerSqlite({ filename: join(dir, "stores.db") })]),
  Layer.provideMerge(Runner.layerSqlite({ filename: journalDb, pollInterval: "20 millis", lockExpiration: "2 seconds", shutdownTimeout: "1 second" }))
)

// a durable run whose tool asks which branch to deploy (choices main / staging)
const deploy = Tool.make("deploy", {
  description: "Deploys a service; asks which branch.",
  input: Schema.Struct({ service: Schema.String }),
  failure: Ask.NotAnswered,
  services: [Ask.Ask],
  handler: ({ service }) =>
    Effect.map(
      Ask.question({
        message: `Which branch of ${service}?`,
        answer: Schema.Struct({ branch: Schema.Literals(["main", "staging"]) }),
        choices: [{ branch: "main" }, { branch: "staging" }]
      }),
      ({ branch }) => `deployed ${service}@${branch}`
    )
})
const deployer = DurableAgent.make({ name: "deployer", tools: Result.getOrThrow(ToolRegistry.makeResult([deploy])), pollInterval: "20 millis" })
const deployModel = ChatModel.fromFunction((request) =>
  Effect.succeed(
    request.messages.some((m) => m.role === "tool")
      ? ChatModel.answer("Deployed.")
      : ChatModel.callTools([["q1", "deploy", { service: "api" }]], "Deploying the api.")
  )
)
const deployRunner = deployer.layer.pipe(
  Layer.provide([deployModel, Stores.layerMemory]),
  Layer.provideMerge(Runner.layerSqlite({ filename: asksDb, pollInterval: "20 millis", lockExpiration: "2 seconds", shutdownTimeout: "1 second" }))
)

let browser: BrowserContext | undefined
const launch = async () => {
  const { chromium: launcher } = await import("playwright-core")
  // a fresh profile (--user-data-dir, which playwright takes as this argument)
  return launcher.launchPersistentContext(join(dir, "profile"), {
    executablePath: chromium,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
  })
}

beforeAll(async () => {
  if (!present) return
  mkdirSync(images, { recursive: true })
  await Effect.runPromise(record(events))
  await Effect.runPromise(recordHostile(hostileEvents))
  browser = await launch()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  rmSync(dir, { recursive: true, force: true })
})

const pageOf = (url: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const page = await browser!.newPage()
      await page.goto(url)
      return page
    }),
    (page) => Effect.promise(() => page.close())
  )

/**
 * Waits until `expression` is true in `page`, polling `page.evaluate` (the pages' CSP allows their
 * own script only, so playwright's `waitForFunction`, which evaluates a string in the page, is refused).
 */
const until = async (page: Page, expression: string, timeout: number) => {
  const deadline = Date.now() + timeout
  while (!(await page.evaluate(expression))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${expression}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const repo = join(import.meta.dirname, "..", "..")
const localNode = join(repo, "node_modules", ".bin", "node")
const node = existsSync(localNode) ? localNode : process.execPath

/** `tinyagents inspect <args>` as a process (the real binary), until the scope closes; its URL. */
const inspectProcess = (...args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => spawn(node, ["--conditions=tinyagents-source", join(repo, "src", "cli", "bin.ts"), "inspect", ...args], { cwd: repo })),
      (child) => Effect.sync(() => void child.kill("SIGINT"))
    )
    return yield* Effect.callback<string, Error>((resume) => {
      let out = ""
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString()
        const url = /at (http:\/\/127\.0\.0\.1:\d+) \(Ctrl-C to stop\)/.exec(out)?.[1]
        if (url !== undefined) resume(Effect.succeed(url))
      })
      child.on("exit", (code) => resume(Effect.fail(new Error(`tinyagents inspect exited ${code}: ${out}`))))
    })
  })

describe.skipIf(!present)("the inspector in chromium", () => {
  it.live("npm start's recorded runs, opened with the command it prints (the real binary)", () =>
    Effect.gen(function*() {
      const demo = spawnSync(node, ["scratchpad/main.ts"], { cwd: repo, encoding: "utf8", timeout: 60_000, env: { ...process.env, TINYAGENTS_DEMO_EVENTS: demoEvents } })
      assert.strictEqual(demo.status, 0, demo.stderr)
      assert.include(demo.stdout, `See the runs in a browser: npm run tinyagents -- inspect ${demoEvents}`)
      const url = yield* inspectProcess(demoEvents)
      const page = yield* pageOf(`${url}/`)
      yield* Effect.promise(async () => {
        const runs = await page.locator("tr.run").allInnerTexts()
        assert.ok(runs.some((r) => r.includes("demo-run")), runs.join("\n"))
        assert.ok(runs.some((r) => r.includes("demo-review/")), "the review's nested run, under it")
        await page.setViewportSize({ width: 1280, height: 300 })
        await page.screenshot({ path: join(images, "inspect-runs.png") })
        await page.setViewportSize({ width: 1280, height: 900 })
        await page.click(`a[href="/run?id=demo-run"]`)
        await page.waitForSelector("details.call")
        // the demo's refusal (invalid arguments) and its retry, as a person sees them
        const refused = page.locator(`details.call[data-call="call_total_bad"]`)
        assert.include(await refused.locator(".state").innerText(), "refused")
        await refused.locator("summary").click()
        assert.include(await refused.locator(".repair").innerText(), "invalid arguments")
        await page.locator(`details.call[data-call="call_rate"] summary`).click()
        assert.include(await page.locator(`details.call[data-call="call_rate"]`).innerText(), "retry (attempt 2)")
      })
    }).pipe(Effect.scoped), 90_000)

  it.live("a recorded run: the runs, the calls, a refusal's message, a redacted value shown redacted", () =>
    Effect.gen(function*() {
      const { url } = yield* Server.serve(Sources.jsonl(events, "events.jsonl"))
      const page = yield* pageOf(`${url}/`)
      yield* Effect.promise(async () => {
        assert.include(await page.locator("tr.run").first().innerText(), "test-run")
        await page.click(`a[href="/run?id=test-run"]`)
        await page.waitForSelector("details.call")
        const names = await page.locator("details.call > summary .name b").allInnerTexts()
        for (const name of ["index_documents", "lookup", "token", "send", "researcher", "add"]) assert.include(names, name)
        // the refusal: its state and, opened, the message the model reads
        const refused = page.locator(`details.call[data-call="c2"]`)
        assert.include(await refused.locator(".state").innerText(), "refused")
        await refused.locator("summary").click()
        assert.include(await refused.locator(".repair").innerText(), "invalid arguments")
        // redacted values: shown as the events carry them
        const sent = page.locator(`details.call[data-call="c5"]`)
        await sent.locator("summary").click()
        assert.include(await sent.locator(".redacted").first().innerText(), "[redacted]")
        await page.locator(`details.call[data-call="c4"] summary`).click()
        const body = await page.locator("main").innerText()
        for (const secret of secrets) assert.notInclude(body, secret)
        assert.include(body, "nested run")
        await page.screenshot({ path: join(images, "inspect-run.png"), fullPage: true })
      })
    }).pipe(Effect.scoped))

  it.live("a run whose every string is markup: no dialog opens, no element of it appears, on the first load nor on a reload from the source's changes", () =>
    Effect.gen(function*() {
      const { url } = yield* Server.serve(Sources.jsonl(hostileEvents, `hostile ${hostile}.jsonl`))
      const page = yield* pageOf(`${url}/`)
      yield* Effect.promise(async () => {
        const dialogs: Array<string> = []
        page.on("dialog", (dialog) => {
          dialogs.push(dialog.message())
          void dialog.dismiss()
        })
        // the page's own script and style, and no other element that runs or loads anything
        const foreign = async () => Number(await page.evaluate(`document.querySelectorAll("img, svg, iframe, object, embed, link, base, meta[http-equiv]").length + document.scripts.length + document.querySelectorAll("style").length - 2`))
        assert.strictEqual(await foreign(), 0)
        await page.click(`a[href="/run?id=${encodeURIComponent(hostileRunId)}"]`)
        await page.waitForSelector("details.call")
        for (const summary of await page.locator("details.call > summary").all()) await summary.click()
        assert.strictEqual(await page.locator("details.call[open]").count(), 4)
        const main = await page.locator("main").innerText()
        assert.include(main, hostile.slice(0, 40)) // shown as text
        assert.strictEqual(await foreign(), 0)
        // a change of the source: the page reloads its content (DOMParser, then into the page)
        appendFileSync(hostileEvents, `${hostile}\n`)
        await until(page, `Number(document.body.dataset.refreshed || 0) >= 1`, 15_000)
        assert.strictEqual(await page.locator("details.call[open]").count(), 4)
        assert.strictEqual(await foreign(), 0)
        await page.goto(`${url}/`)
        assert.include(await page.locator("table.unreadable").innerText(), "line ")
        assert.strictEqual(await foreign(), 0)
        assert.deepStrictEqual(dialogs, [])
        // another site's page (another loopback origin: chromium refuses a public one anyway) cannot
        // frame the inspector (a click on Approve tricked through a frame)
        const other = createServer((_, res) => res.writeHead(200, { "content-type": "text/html" }).end(`<iframe src="${url}/"></iframe>`))
        await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve))
        const framing = await browser!.newPage()
        try {
          const address = other.address()
          await framing.goto(`http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/`)
          await framing.waitForTimeout(500)
          const frame = framing.frames().find((f) => f !== framing.mainFrame())
          const framed = frame === undefined ? "" : String(await frame.evaluate(`document.body ? document.body.innerText : ""`).catch(() => ""))
          assert.notInclude(framed, "tinyagents inspect")
        } finally {
          await framing.close()
          other.close()
        }
      })
    }).pipe(Effect.scoped))

  it.live("a live run: the page shows calls as the application's events arrive", () =>
    Effect.gen(function*() {
      const { url } = yield* Inspector
      const page = yield* pageOf(`${url}/`)
      yield* Effect.promise(() => page.waitForSelector("text=No runs in this source"))
      const tools = yield* ToolRegistry.make([send])
      const model = ChatModel.scripted([
        ChatModel.callTools([["l1", "send", { to: "carol@example.com", body: "live" }]], "Sending."),
        ChatModel.answer("Sent.")
      ])
      yield* Stream.runDrain(Agent.stream({ messages: [{ role: "user", content: "send" }], tools })).pipe(Effect.provide(model))
      yield* Effect.promise(async () => {
        await page.waitForSelector("tr.run", { timeout: 10_000 })
        await page.click("tr.run a")
        await page.waitForSelector(`details.call[data-call="l1"][data-state="completed"]`)
        assert.notInclude(await page.locator("main").innerText(), "carol@example.com")
      })
    }).pipe(
      Effect.scoped,
      // the live sink inside: it replaces the test services' own
      Effect.provide(layerLive({ onReady: () => {} })),
      Effect.provide(ToolServices.layerTest())
    ))

  it.live("a durable journal: a pending approval approved from the page reaches the run, which finishes", () =>
    Effect.gen(function*() {
      yield* mailer.start("mail-1", [{ role: "user", content: "mail the report" }])
      yield* mailer.pending("mail-1").pipe(
        Effect.repeat({ until: (pending) => pending.length === 2, schedule: Schedule.spaced("20 millis") }),
        Effect.timeout("20 seconds")
      )
      const { url } = yield* Server.serve(yield* Sources.open(journalDb, { allowDecisions: true }))
      const page = yield* pageOf(`${url}/run?id=mail-1`)
      yield* Effect.promise(async () => {
        assert.include(await page.locator(".durable").innerText(), "awaiting approval (2)")
        assert.notInclude(await page.locator("main").innerText(), "alice@example.com")
        await page.screenshot({ path: join(images, "inspect-durable.png"), fullPage: true })
        await page.locator(`tr.pending[data-call="c1"] button.approve`).click()
        await page.waitForSelector(".flash")
        assert.include(await page.locator(".flash").innerText(), "approved c1 of run mail-1")
        await page.locator(`tr.pending[data-call="c2"] input[name="reason"]`).fill("not bob")
        await page.locator(`tr.pending[data-call="c2"] button.deny`).click()
        await page.waitForSelector(".flash")
        assert.include(await page.locator(".flash").innerText(), "denied c2 of run mail-1")
      })
      const result = yield* mailer.result("mail-1").pipe(Effect.timeout("20 seconds"))
      assert.strictEqual(result.text, "Both sent.")
      const outcome = yield* Effect.promise(async () => {
        await page.reload()
        return page.locator("main").innerText()
      })
      assert.include(outcome, "finished")
    }).pipe(Effect.scoped, Effect.provide(runner)), 60_000)

  it.live("a durable question: an empty form refused with its reason on the page (still open), then answered by clicking a choice; the run finishes", () =>
    Effect.gen(function*() {
      yield* deployer.start("release-7", [{ role: "user", content: "deploy the api" }])
      yield* deployer.questions("release-7").pipe(
        Effect.repeat({ until: (open) => open.length === 1, schedule: Schedule.spaced("20 millis") }),
        Effect.timeout("20 seconds")
      )
      const { url } = yield* Server.serve(yield* Sources.open(asksDb, { allowDecisions: true }))
      const page = yield* pageOf(`${url}/`)
      yield* Effect.promise(async () => {
        assert.include(await page.locator(`tr.run[data-run="release-7"]`).innerText(), "awaiting answer (1)")
        await page.click(`a[href="/run?id=release-7"]`)
        const row = page.locator(`tr.question[data-call="q1"][data-question="1"]`)
        assert.include(await row.locator(".message").innerText(), "Which branch of api?")
        assert.include(await page.locator(`details.call[data-call="q1"] .state`).innerText(), "awaiting answer")
        await page.screenshot({ path: join(images, "inspect-question.png"), fullPage: true })
        await row.locator(`form.decline input[name="reason"]`).fill("typing")
      })
      // how many times the page's script reloaded its content (a string: this project's types have no DOM)
      const refreshed = Effect.promise(async () => Number(await page.evaluate("document.body.dataset.refreshed || 0")))
      const before = yield* refreshed
      // the journal changes (another run asks) while a person types: the page does not reload under them
      yield* deployer.start("release-8", [{ role: "user", content: "deploy the api" }])
      yield* deployer.questions("release-8").pipe(
        Effect.repeat({ until: (open) => open.length === 1, schedule: Schedule.spaced("20 millis") }),
        Effect.timeout("20 seconds")
      )
      yield* Effect.sleep("2500 millis")
      assert.strictEqual(yield* refreshed, before)
      yield* Effect.promise(async () => {
        const row = page.locator(`tr.question[data-call="q1"][data-question="1"]`)
        assert.strictEqual(await row.locator(`form.decline input[name="reason"]`).inputValue(), "typing")
        // left empty: it reloads
        await row.locator(`form.decline input[name="reason"]`).fill("")
        await page.locator("h1").click()
        await until(page, `Number(document.body.dataset.refreshed || 0) > ${before}`, 10_000)
        // the form's Answer with no branch chosen: refused, the reason on the page, the question still open
        await row.locator("form.answer-fields button.answer").click()
        await page.waitForSelector(".flash.bad")
        const refusal = await page.locator(".flash.bad").innerText()
        assert.match(refusal, /answer refused \(the question stays open\): .*branch/)
        assert.strictEqual(await page.locator(`tr.question[data-call="q1"]`).count(), 1)
        // a choice, clicked
        await page.locator(`tr.question[data-call="q1"] button.choice`, { hasText: "staging" }).click()
        await page.waitForSelector(".flash:not(.bad)")
        assert.include(await page.locator(".flash").innerText(), "answered question 1 of call q1 of run release-7")
      })
      const result = yield* deployer.result("release-7").pipe(Effect.timeout("20 seconds"))
      assert.strictEqual(result.text, "Deployed.")
      const shown = yield* Effect.promise(async () => {
        await page.goto(`${url}/run?id=release-7`)
        await page.locator(`details.call[data-call="q1"] summary`).click()
        return page.locator("main").innerText()
      })
      assert.include(shown, "finished")
      assert.include(shown, `answered {"branch":"staging"} by inspector`)
    }).pipe(Effect.scoped, Effect.provide(deployRunner)), 60_000)
})
