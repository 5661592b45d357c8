/**
 * The `tinyagents/durable` entry point: agents whose runs survive crashes and spread across
 * processes, on `effect/workflow` and Effect Cluster. `DurableAgent` (the workflow, starting runs,
 * results, events, approvals), `DurableAgentTool` (a durable agent as another's tool, resumed after a
 * crash: `DurableAgent.asTool`), `Runner` (where runs run: SQLite or Postgres), `Journal` (what is
 * journaled, as Schemas).
 */
export * as DurableAgent from "./DurableAgent.ts"
export * as DurableAgentTool from "./DurableAgentTool.ts"
export * as Journal from "./Journal.ts"
export * as Runner from "./Runner.ts"
