/**
 * Runs a repository script the way `npm run ...` does (the project's Node,
 * the repository as the working directory, `--conditions=tinyagents-source`
 * so `tinyagents` resolves to `src/`) with exactly the environment the
 * test gives it plus `PATH` (and Node's compile cache, test/support/compileCache.ts):
 * no key, base URL or model leaks in from the machine. Asynchronous, so a
 * loopback server in the test process can answer.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { compileCache } from "../../support/compileCache.ts"

/** The repository root. */
export const repo = fileURLToPath(new URL("../../..", import.meta.url))

/** How a script run ended. */
export interface Run {
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs `node --conditions=tinyagents-source <args>` in `cwd` (the repository by default) with `env`
 * (and `PATH`); kills it after `timeout` ms.
 */
export const runNode = (
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>> = {},
  timeout = 60_000,
  cwd = repo
): Promise<Run> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--conditions=tinyagents-source", ...args], {
      cwd,
      env: { PATH: process.env["PATH"] ?? "", ...compileCache, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      timeout
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.on("error", reject)
    child.on("close", (status) => resolve({ status, stdout, stderr }))
  })

/** An OpenAI `ChatCompletion` body (the recorded fixtures' shape) with `content` and/or function `calls`. */
export const completion = (
  content: string | null,
  calls: ReadonlyArray<readonly [id: string, name: string, args: string]> = []
): unknown => ({
  id: "chatcmpl-loopback",
  object: "chat.completion",
  created: 1699896916,
  model: "gpt-4o-mini",
  choices: [{
    index: 0,
    message: {
      role: "assistant",
      content,
      ...(calls.length === 0 ? {} : {
        tool_calls: calls.map(([id, name, args]) => ({ id, type: "function", function: { name, arguments: args } }))
      }),
      refusal: null
    },
    logprobs: null,
    finish_reason: calls.length === 0 ? "stop" : "tool_calls"
  }],
  usage: { prompt_tokens: 80, completion_tokens: 12, total_tokens: 92 }
})
