/**
 * `McpServe.Client`: what a tool served over MCP may ask the client that called it (form
 * elicitation, sampling), built on Effect's `McpSchema.McpServerClient` (the request's reverse
 * client). The registrations provide it to a handler only while it runs as a served `tools/call`;
 * anywhere else it is absent, so a tool reads it with `Effect.serviceOption(McpServe.Client)` and it
 * never enters the tool's requirements.
 */
import { Context, Data, Effect, Schema } from "effect"
import { McpSchema } from "effect/ai"

/** The form an elicitation asks for: a flat object of primitive fields (the MCP spec's restricted JSON Schema). */
export type ElicitSchema = (typeof McpSchema.ElicitRequestFormParams.Encoded)["requestedSchema"]

/** What the user did: `accept` (with the form's `content`), `decline` or `cancel`. */
export type ElicitResult = typeof McpSchema.ElicitResult.Encoded

/** `sampling/createMessage` parameters as on the wire (`messages`, `maxTokens`, `systemPrompt`, ...). */
export type CreateMessageParams = typeof McpSchema.CreateMessage.payloadSchema.Encoded

/** The client's sampled message as on the wire (`role`, `content`, `model`, `stopReason`). */
export type CreateMessageResult = typeof McpSchema.CreateMessageResult.Encoded

/**
 * A request to the client that did not get an answer: the client did not declare the capability
 * (`unsupported`), the parameters are not valid MCP (`invalid`), or the request failed on the way or
 * on the client (`failed`; a JSON-RPC error the client answered with, a closed connection).
 */
export class ClientRequestError extends Data.TaggedError("McpClientRequestError")<{
  readonly operation: "elicitation/create" | "sampling/createMessage"
  readonly reason: "unsupported" | "invalid" | "failed"
  readonly message: string
  readonly cause?: unknown
}> {}

/** The calling client, while a tool runs as a `tools/call` served by `McpServe`. */
export class Client extends Context.Service<Client, {
  /** What the client declared on `initialize`. */
  readonly capabilities: { readonly elicitation: boolean; readonly sampling: boolean }
  /** Asks the user for input through the client (`elicitation/create`, form mode). */
  readonly elicit: (message: string, requestedSchema: ElicitSchema) => Effect.Effect<ElicitResult, ClientRequestError>
  /** Asks the client to sample its model (`sampling/createMessage`). */
  readonly createMessage: (params: CreateMessageParams) => Effect.Effect<CreateMessageResult, ClientRequestError>
}>()("tinyagents/McpServe/Client") {}

const failed = (operation: ClientRequestError["operation"]) => (cause: unknown) =>
  new ClientRequestError({
    operation,
    reason: cause instanceof McpSchema.McpReverseOperationUnsupported ? "unsupported" : "failed",
    message: `${operation}: ${
      cause instanceof McpSchema.McpReverseOperationUnsupported
        ? cause.reason
        : cause instanceof McpSchema.McpReverseOperationError
        ? messageOf(cause.cause)
        : messageOf(cause)
    }`,
    cause
  })

const messageOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && typeof (cause as { message?: unknown }).message === "string"
    ? (cause as { message: string }).message
    : String(cause)

const invalid = (operation: ClientRequestError["operation"]) => (error: Schema.SchemaError) =>
  new ClientRequestError({ operation, reason: "invalid", message: `${operation}: ${error.message}`, cause: error })

const unsupported = (operation: ClientRequestError["operation"], capability: string) =>
  new ClientRequestError({
    operation,
    reason: "unsupported",
    message: `${operation}: the client did not declare the ${capability} capability`
  })

const decodeElicit = Schema.decodeUnknownEffect(McpSchema.ElicitRequestFormParams)
const encodeElicitResult = Schema.encodeUnknownEffect(McpSchema.ElicitResult)
const decodeCreateMessage = Schema.decodeUnknownEffect(McpSchema.CreateMessage.payloadSchema)
const encodeCreateMessageResult = Schema.encodeUnknownEffect(McpSchema.CreateMessageResult)

/** The {@link Client} of the request whose `McpServerClient` this is. */
export const fromServerClient = (server: McpSchema.McpServerClient["Service"]): Client["Service"] => {
  const capabilities = {
    elicitation: server.clientCapabilities.elicitation !== undefined,
    sampling: server.clientCapabilities.sampling !== undefined
  }
  return Client.of({
    capabilities,
    elicit: (message, requestedSchema) => {
      const operation = "elicitation/create"
      if (!capabilities.elicitation) return Effect.fail(unsupported(operation, "elicitation"))
      return Effect.gen(function*() {
        const request = yield* decodeElicit({ mode: "form", message, requestedSchema }).pipe(
          Effect.mapError(invalid(operation))
        )
        const client = yield* server.getClient
        const result = yield* client.elicit(request).pipe(Effect.mapError(failed(operation)))
        return yield* encodeElicitResult(result).pipe(Effect.mapError(invalid(operation)))
      }).pipe(Effect.scoped)
    },
    createMessage: (params) => {
      const operation = "sampling/createMessage"
      if (!capabilities.sampling) return Effect.fail(unsupported(operation, "sampling"))
      return Effect.gen(function*() {
        const request = yield* decodeCreateMessage(params).pipe(Effect.mapError(invalid(operation)))
        const client = yield* server.getClient
        const result = yield* client.createMessage(request).pipe(Effect.mapError(failed(operation)))
        return yield* encodeCreateMessageResult(result).pipe(Effect.mapError(invalid(operation)))
      }).pipe(Effect.scoped)
    }
  })
}
