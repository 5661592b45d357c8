/**
 * Tool events on the command line's stderr: the `--events` flag (`text`, `jsonl` or `none`), one
 * line of text per event ({@link formatEvent}), and the `EventSink` that writes them.
 */
import { Cause, Console, Effect } from "effect"
import { Flag } from "effect/cli"
import * as ToolEvent from "../../contract/ToolEvent.ts"
import { EventSink } from "../../runtime/EventSink.ts"
import { innerCause } from "./errors.ts"

/** How events are printed on stderr. */
export const eventFormats = ["text", "jsonl", "none"] as const
export type EventFormat = typeof eventFormats[number]

/** The `--events` flag of the commands that run tools. */
export const eventsFlag = Flag.Literals("events", eventFormats).pipe(
  Flag.withDescription("How events are printed on stderr: a line of text each, JSON lines (ToolEvent's JSON), or not at all (default: text)"),
  Flag.withDefault("text")
)

/** One line of text for a tool event (what `--events text` prints). */
export const formatEvent = (event: ToolEvent.Event): string => {
  switch (event._tag) {
    case "tool.started":
      return `started   ${event.toolName} ${event.toolCallId} ${JSON.stringify(event.arguments)}${
        event.idempotencyKey === undefined ? "" : ` (key ${event.idempotencyKey})`
      }`
    case "tool.completed":
      return `completed ${event.toolName} ${event.toolCallId} in ${event.elapsed} ms${
        event.isError ? " (error result)" : ""
      }${event.artifacts.map((a) => `, artifact ${a.store}/${a.key} (${a.bytes} bytes)`).join("")}`
    case "tool.failed": {
      const line =
        `failed    ${event.toolName} ${event.toolCallId} after ${event.elapsed} ms [${event.disposition}, ${event.reason}] ${event.error.message}`
      const inner = innerCause(event.error)
      return inner === undefined ? line : `${line}\n${Cause.pretty(inner).split("\n").map((l) => `    ${l}`).join("\n")}`
    }
    case "tool.rejected":
      return `rejected  ${event.toolName} ${event.toolCallId} [${event.error.disposition}] ${event.error.message}`
    case "tool.retrying":
      return `retrying  ${event.toolName} ${event.toolCallId} attempt ${event.attempt} in ${event.delay} ms (${event.error.message})`
    case "tool.artifact_stored":
      return `artifact  ${event.toolName} ${event.toolCallId} stored as ${event.artifact.store}/${event.artifact.key}`
    case "tool.audit":
      return `audit     ${event.toolName} ${event.toolCallId} ${event.audit.layers.map((l) => `${l.name}:${l.status}`).join(" ")}${
        event.audit.summary === undefined ? "" : ` (${event.audit.summary})`
      }`
    case "tool.progress": {
      const count = event.count === undefined ? "" : ` ${event.count}${event.total === undefined ? "" : `/${event.total}`}`
      const fraction = event.fraction === undefined ? "" : ` (${Math.round(event.fraction * 100)}%)`
      return `progress  ${event.toolName} ${event.toolCallId}${count}${fraction}${event.message === undefined ? "" : ` ${event.message}`}`
    }
    case "tool.question":
      return `question  ${event.toolName} ${event.toolCallId} #${event.question} ${JSON.stringify(event.message)}`
    case "tool.answered":
      return `answered  ${event.toolName} ${event.toolCallId} #${event.question} ${event.outcome}${
        event.outcome === "answered" ? ` ${JSON.stringify(event.answer)}` : event.reason === undefined ? "" : ` (${event.reason})`
      }`
    case "agent.text_delta":
    case "agent.tool_call":
    case "agent.turn_started":
    case "agent.model_responded":
    case "agent.finished":
    case "agent.output_delta":
      return event._tag
    case "agent.output":
      return `output    ${JSON.stringify(event.output)}`
    case "agent.state":
      return event.refused === undefined
        ? `state     ${event.toolName} ${event.toolCallId} ${JSON.stringify(event.update)} -> ${JSON.stringify(event.state)}`
        : `state     ${event.toolName} ${event.toolCallId} refused: ${event.refused}`
    case "agent.handoff":
      return `handoff   ${event.toolName} ${event.toolCallId} to ${event.target}: ${event.task}`
    case "agent.tools_revealed":
      return `revealed  ${event.names.length === 0 ? "(none)" : event.names.join(", ")} by ${event.toolName} ${event.toolCallId}: ${JSON.stringify(event.query)}`
    case "agent.approval_requested":
      return `approval  ${event.toolName} ${event.toolCallId} ${JSON.stringify(event.arguments)} waits for a decision`
  }
}

/** The sink that prints events on stderr as `format` says. */
export const sinkFor = (format: EventFormat): EventSink["Service"] =>
  EventSink.of({
    emit: (event) =>
      format === "none"
        ? Effect.void
        : format === "jsonl"
        ? Effect.flatMap(ToolEvent.encodeJson(event), (line) => Console.error(line))
        : Console.error(formatEvent(event))
  })
