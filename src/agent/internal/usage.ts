/**
 * How a nested run's token usage reaches the run whose tool call runs it: each run reads the meter
 * of the run around it (a no-op at the top), adds every usage it counts to it, and gives its own
 * batches a fresh meter whose total it folds into its usage after each batch. So a run's usage
 * includes its nested runs', at every depth, even when a nested run fails or is cancelled.
 */
import { Context } from "effect"
import type { Usage } from "../ChatModel.ts"

export interface Meter {
  readonly add: (usage: Usage) => void
}

export const UsageMeter = Context.Reference<Meter>("tinyagents/agent/UsageMeter", {
  defaultValue: () => ({ add: () => {} })
})
