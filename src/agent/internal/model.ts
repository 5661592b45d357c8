/**
 * An agent definition's own model (`AgentTool.Definition.model`) around its run: a `ChatModel`, or a
 * layer built for the run; none keeps the model in scope.
 */
import { Effect, Layer } from "effect"
import { ChatModel, type ChatModelShape } from "../ChatModel.ts"

export const provideModel = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  model: ChatModelShape | Layer.Layer<ChatModel> | undefined
): Effect.Effect<A, E, R> =>
  model === undefined
    ? effect
    : Layer.isLayer(model)
    ? Effect.provide(effect, model as Layer.Layer<ChatModel>) as Effect.Effect<A, E, R>
    : Effect.provideService(effect, ChatModel, model) as Effect.Effect<A, E, R>
