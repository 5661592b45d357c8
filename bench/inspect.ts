/**
 * The inspector (`tinyagents inspect`) on a run of 10,000 tool calls (100 turns of 100 calls: 20,200
 * event lines, about 4.5 MB of JSONL), served on loopback. Rows, each the median of 5 samples:
 *
 * - `floor`: reading the file and `JSON.parse` of every line (what any reader pays);
 * - `cold run page`: a fresh source: the file decoded through the event Schemas, the run model
 *   built, page 1 rendered and fetched (the first load after the file changed);
 * - `run page 1 / 25 / 50` and `runs list`: the same source again (decoded once, kept until the file
 *   changes): one page of 200 calls rendered and fetched;
 * - with `/usr/bin/chromium` (playwright-core): `browser: run page` (navigation to the page's `load`
 *   event, a fresh page each time) and `browser: open a call` (a click on a call to its details shown).
 *
 * `TINYAGENTS_BENCH=inspect npm run bench` runs only this case.
 */
import { Effect } from "effect"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Server, Sources } from "../src/cli/inspect/index.ts"
import * as ToolEvent from "../src/contract/ToolEvent.ts"

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const samples = 5

/** A 10,000-call run as JSON lines. */
const write = (file: string): number => {
  const lines: Array<string> = []
  let sequence = 0
  let timestamp = 1_800_000_000_000
  const stamp = () => ({ runId: "big", threadId: "t", sequence: sequence++, timestamp: timestamp++ })
  for (let turn = 0; turn < 100; turn++) {
    lines.push(Effect.runSync(ToolEvent.encodeJson({ _tag: "agent.turn_started", ...stamp(), turn, advertised: ["lookup"] })))
    for (let i = 0; i < 100; i++) {
      const toolCallId = `call_${turn}_${i}`
      lines.push(Effect.runSync(ToolEvent.encodeJson({ _tag: "tool.started", ...stamp(), toolCallId, toolName: "lookup", attempt: 1, arguments: { id: i, query: "q3 revenue by region and month" } })))
      lines.push(Effect.runSync(ToolEvent.encodeJson({ _tag: "tool.completed", ...stamp(), toolCallId, toolName: "lookup", attempt: 1, elapsed: 3, isError: false, output: `record ${i}: ${"lorem ipsum ".repeat(8)}`, artifacts: [] })))
    }
    lines.push(Effect.runSync(ToolEvent.encodeJson({ _tag: "agent.model_responded", ...stamp(), turn, toolCalls: 100, text: `Turn ${turn}: looking up 100 records.`, usage: { inputTokens: 1200, outputTokens: 80 } })))
  }
  writeFileSync(file, `${lines.join("\n")}\n`)
  return lines.length
}

const timed = async (f: () => Promise<unknown>): Promise<number> => {
  const start = performance.now()
  await f()
  return performance.now() - start
}

const fetchText = async (url: string): Promise<number> => (await (await fetch(url)).text()).length

/** The rows of the inspector case. */
export const inspectRows = async (): Promise<Array<Record<string, string | number>>> => {
  const dir = mkdtempSync(join(tmpdir(), "tinyagents-bench-inspect-"))
  const file = join(dir, "events.jsonl")
  const lines = write(file)
  const rows: Array<Record<string, string | number>> = []
  const row = (name: string, ms: ReadonlyArray<number>, bytes?: number) =>
    rows.push({ case: name, "ms (median)": +median(ms).toFixed(1), ...(bytes === undefined ? {} : { "HTML KB": +(bytes / 1024).toFixed(0) }) })
  try {
    row(`floor: read + JSON.parse ${lines} lines`, await Promise.all([...Array(samples)].map(() => timed(async () => readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))))))
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const cold: Array<number> = []
      for (let i = 0; i < samples; i++) {
        const { url } = yield* Server.serve(Sources.jsonl(file))
        cold.push(yield* Effect.promise(() => timed(() => fetchText(`${url}/run?id=big`))))
      }
      row("cold run page (decode, model, render)", cold)
      const { url } = yield* Server.serve(Sources.jsonl(file))
      yield* Effect.promise(() => fetchText(`${url}/run?id=big`))
      for (const page of [1, 25, 50]) {
        const bytes = yield* Effect.promise(() => fetchText(`${url}/run?id=big&page=${page}`))
        const ms: Array<number> = []
        for (let i = 0; i < samples; i++) ms.push(yield* Effect.promise(() => timed(() => fetchText(`${url}/run?id=big&page=${page}`))))
        row(`run page ${page} (200 calls)`, ms, bytes)
      }
      const listMs: Array<number> = []
      for (let i = 0; i < samples; i++) listMs.push(yield* Effect.promise(() => timed(() => fetchText(`${url}/`))))
      row("runs list", listMs)
      if (existsSync("/usr/bin/chromium")) {
        const { chromium } = yield* Effect.promise(() => import("playwright-core"))
        const context = yield* Effect.acquireRelease(
          Effect.promise(() =>
            chromium.launchPersistentContext(join(dir, "profile"), {
              executablePath: "/usr/bin/chromium",
              headless: true,
              args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
            })
          ),
          (context) => Effect.promise(() => context.close())
        )
        const load: Array<number> = []
        const open: Array<number> = []
        for (let i = 0; i < samples; i++) {
          const page = yield* Effect.promise(() => context.newPage())
          load.push(yield* Effect.promise(() => timed(() => page.goto(`${url}/run?id=big&page=25`, { waitUntil: "load" }))))
          open.push(yield* Effect.promise(() =>
            timed(async () => {
              await page.click(`details.call[data-call="call_48_50"] > summary`)
              await page.waitForSelector(`details.call[data-call="call_48_50"][open] .detail`, { state: "visible" })
            })
          ))
          yield* Effect.promise(() => page.close())
        }
        row("browser: run page (navigation to load)", load)
        row("browser: open a call's details", open)
      } else {
        rows.push({ case: "browser rows skipped: no chromium", "ms (median)": 0 })
      }
    })))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}
