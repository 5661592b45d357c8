/**
 * The durable call a tool handler runs in: provided by the `tool/<n>/<i>` activity to the call it
 * runs, read by `DurableAgent.asTool` to name its nested run by position (`<run>/<turn>/<index>`)
 * and to tell it the runs it is nested in (whose cancellation stops it). `undefined` outside one.
 * It reaches everything the call runs, an inline agent's calls (`Agent.asTool`) too: `caller` and
 * `callId` tell the call itself from those.
 */
import { Context } from "effect"
import type * as Tables from "./tables.ts"

export interface DurableCall {
  /** The run the call belongs to. */
  readonly run: Tables.RunKey
  /** The call's position in its turn. */
  readonly index: number
  /** The call's id and the run id its handler sees (`RunContext.runId`: a handoff's leg has its own). */
  readonly callId: string
  readonly caller: string
  /** The nested runs the call started (`DurableAgent.asTool` adds them): a call that times out cancels them. */
  readonly started: Array<Tables.RunKey>
  /** The runs that run is nested in, outermost first. */
  readonly within: ReadonlyArray<Tables.RunKey>
}

export const CurrentCall = Context.Reference<DurableCall | undefined>("tinyagents/durable/CurrentCall", {
  defaultValue: () => undefined
})
