/**
 * The service scaffolding the HTTP chat-model adapters share, so each states
 * only its wire format: `make` turns an adapter's {@link Spec} (endpoint and
 * headers, request encoder, response decoder, stream decoder) into a
 * `ChatModelShape` whose `generate` is one JSON POST and whose `stream` is
 * one server-sent-events POST, each in a span named after the adapter;
 * `layer` and `layerConfig` build the `ChatModel` layers, the latter reading
 * the connection from the variables the adapter names.
 */
import { Effect, Layer, Result, Stream } from "effect"
import { HttpClient } from "effect/http"
import {
  ChatModel,
  type ChatModelError,
  type ChatModelShape,
  make as ChatModelMake,
  type Request,
  type Response
} from "../../ChatModel.ts"
import type { ModelConfigError } from "../ModelConfigError.ts"
import * as ModelConfig from "./config.ts"
import * as HttpChat from "./httpChat.ts"
import * as HttpStream from "./httpStream.ts"

/** How one streaming request differs from the `generate` one. */
export interface Sse {
  /** The endpoint, when not the `generate` one. */
  readonly url?: string
  /** The body to send (the encoded request with the provider's streaming flags). */
  readonly body: unknown
  /** A fresh event decoder per stream. */
  readonly decoder: () => HttpStream.EventDecoder
}

/** What an adapter says about itself; `Body` is its encoded request. */
export interface Spec<Body> {
  /** The adapter's module name: spans are `{name}.generate` and `{name}.stream`. */
  readonly name: string
  /** The model, as the spans' `model` attribute. */
  readonly model: string
  /** Endpoint, headers and attempt policy of `generate` (and of `stream`, but for its `url`). */
  readonly post: HttpChat.PostOptions
  /** The request body; a failure is never sent. */
  readonly encode: (request: Request) => Result.Result<Body, ChatModelError>
  /** How a whole answer to `request` reads (for `generate`, and a server that ignored the request to stream). */
  readonly decode: (json: unknown, request: Request) => Result.Result<Response, ChatModelError>
  /** The streaming request for an encoded `body`. */
  readonly stream: (body: Body, request: Request) => Sse
  /** The adapter sends `Request.output` as the provider's structured output (`ChatModel.structuredOutput`). */
  readonly structuredOutput?: boolean
  /** The adapter sends `Request.toolSearch` in the provider's own tool search form (`ChatModel.toolSearch`). */
  readonly toolSearch?: boolean
  /** A last step on every whole answer (`generate`'s, and a stream's `Finished`). */
  readonly finish?: (response: Response, request: Request) => Response
}

/** The model over the current `HttpClient`; `spec` is evaluated once the client is at hand. */
export const make = <Body>(spec: () => Spec<Body>): Effect.Effect<ChatModelShape, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const { decode: decodeRaw, encode, finish, model, name, post, stream, structuredOutput, toolSearch } = spec()
    const decode = finish === undefined
      ? decodeRaw
      : (json: unknown, request: Request) => Result.map(decodeRaw(json, request), (response) => finish(response, request))
    const secrets = HttpChat.secretsOf(post)
    const attributes = { attributes: { model } }
    return ChatModelMake({
      generate: (request) =>
        Effect.gen(function*() {
          const body = yield* Effect.fromResult(encode(request))
          const json = yield* HttpChat.postJson(client, post, body)
          // A decoded answer may quote the body (a failed response's message): scrubbed like every other error.
          return yield* Effect.fromResult(decode(json, request)).pipe(
            Effect.mapError((error) => HttpChat.scrubbed(error, secrets))
          )
        }).pipe(Effect.withSpan(`${name}.generate`, attributes)),
      stream: (request) =>
        Stream.unwrap(Effect.map(Effect.fromResult(encode(request)), (body) => {
          const sse = stream(body, request)
          return HttpStream.postSse(
            client,
            { ...post, ...(sse.url === undefined ? {} : { url: sse.url }), whole: (json) => decode(json, request) },
            sse.body,
            sse.decoder
          ).pipe((parts) =>
            finish === undefined
              ? parts
              : Stream.map(parts, (part) =>
                part._tag === "Finished" ? { ...part, response: finish(part.response, request) } : part)
          )
        })).pipe(Stream.withSpan(`${name}.stream`, attributes))
    }, { structuredOutput: structuredOutput === true, toolSearch: toolSearch === true })
  })

/** An adapter's `layerConfig` options: its `Options` with the key read from the environment and the model optional. */
export type ConfigOptions<Options extends HttpChat.ConnectionOptions> =
  & Omit<Options, "apiKey" | "model">
  & { readonly model?: string }

/** A `ChatModel` layer over `make(options)`; provide an `HttpClient` layer with it. */
export const layer = <Options>(
  make: (options: Options) => Effect.Effect<ChatModelShape, never, HttpClient.HttpClient>,
  options: Options
): Layer.Layer<ChatModel, never, HttpClient.HttpClient> => Layer.effect(ChatModel, make(options))

/**
 * `layer` over `options` completed from the environment: the key from
 * `variables.apiKey`, the model from `variables.model` (else `options.model`;
 * one of the two is required), the base URL from `variables.baseUrl` when set.
 * A missing or invalid value fails the layer with a `ModelConfigError` naming the variable.
 */
export const layerConfig = <Options extends HttpChat.ConnectionOptions>(
  provider: string,
  variables: ModelConfig.Variables,
  layer: (options: Options) => Layer.Layer<ChatModel, never, HttpClient.HttpClient>,
  options: ConfigOptions<Options>
): Layer.Layer<ChatModel, ModelConfigError, HttpClient.HttpClient> =>
  Layer.unwrap(Effect.map(
    ModelConfig.connection(provider, variables, options.model),
    // The connection supplies exactly the fields `ConfigOptions` leaves out or optional.
    (connection) => layer({ ...options, ...connection } as Options)
  ))
