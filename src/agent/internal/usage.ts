/**
 * How a nested run's token usage reaches the run whose tool call runs it: each run reads the meter
 * of the run around it (a no-op at the top), adds every usage it counts to it, and gives its own
 * batches a meter that passes each usage on to it at once and whose total it folds into its own
 * usage after each batch. So a run's usage includes its nested runs', at every depth, even when a
 * nested run fails or is cancelled, or is interrupted in the middle of its own batch.
 */
import { Context } from "effect"
import type { Usage } from "../ChatModel.ts"

export interface Meter {
  readonly add: (usage: Usage) => void
}

export const UsageMeter = Context.Reference<Meter>("tinyagents/agent/UsageMeter", {
  defaultValue: () => ({ add: () => {} })
})
