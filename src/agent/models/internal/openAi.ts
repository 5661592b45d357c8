/**
 * What the two OpenAI adapters (Chat Completions and Responses) share: the
 * variables `layerConfig` reads, the options beyond the connection, the
 * request body's frame (extra parameters, model, tools under strict mode) and
 * the `HttpModel.Spec` frame (bearer key on `{baseUrl}/{path}`, the request's
 * specs kept for strict-mode nulls unless strict mode is off). The wire
 * formats themselves, transcript and answer, are each adapter's.
 */
import { Redacted, Result } from "effect"
import type { ChatModelError, Request, Response } from "../../ChatModel.ts"
import type { ToolSpec } from "../../../contract/Tool.ts"
import type { Strict } from "../../../providers/OpenAiChat.ts"
import { normalizeAnswer } from "../../../providers/OpenAiChat.ts"
import type { ProviderExportError } from "../../../providers/ProviderExportError.ts"
import type * as ModelConfig from "./config.ts"
import * as HttpChat from "./httpChat.ts"
import type * as HttpModel from "./httpModel.ts"

/** The base URL when none is given: the API's, including its `/v1`. */
export const defaultBaseUrl = "https://api.openai.com/v1"

/** The environment variables `layerConfig` reads; `exampleModel` is quoted when the model is missing. */
export const variables = (exampleModel: string): ModelConfig.Variables => ({
  apiKey: { name: "OPENAI_API_KEY", hint: "your OpenAI API key" },
  model: { name: "OPENAI_MODEL", hint: `a model name, e.g. ${exampleModel}` },
  baseUrl: { name: "OPENAI_BASE_URL", example: defaultBaseUrl }
})

/** How to reach the model: the shared connection fields (key, model, timeout, retry, `retry-after` ceiling, headers) and the OpenAI ones. */
export interface Options extends HttpChat.ConnectionOptions {
  /** Default `https://api.openai.com/v1`; any server speaking the same API works. */
  readonly baseUrl?: string
  /** Strict function schemas: `"auto"` (default), `"require"` or `false`. */
  readonly strict?: Strict
  /**
   * Extra body fields, sent as given (Chat Completions: `temperature`, `max_completion_tokens`,
   * `parallel_tool_calls`, ...; Responses: `instructions`, `reasoning`, `max_output_tokens`, `store`, ...).
   */
  readonly parameters?: Readonly<Record<string, unknown>>
}

/**
 * A request body: `parameters` first (so the adapter's fields win), the model,
 * the `transcript` fields, and `tools` when there are any (strict mode `"auto"`
 * unless the options say otherwise); fails when a tool cannot be exported.
 */
export const requestBody = <Tool, Transcript extends object>(
  provider: string,
  options: Pick<Options, "model" | "strict" | "parameters">,
  toolDefinitions: (
    specs: ReadonlyArray<ToolSpec>,
    options: { readonly strict: Strict }
  ) => Result.Result<Array<Tool>, ProviderExportError>,
  request: Request,
  transcript: (messages: Request["messages"]) => Transcript
): Result.Result<
  { readonly model: string; readonly tools?: ReadonlyArray<Tool>; readonly [parameter: string]: unknown } & Transcript,
  ChatModelError
> => {
  const tools = toolDefinitions(request.tools, { strict: options.strict ?? "auto" })
  if (Result.isFailure(tools)) return Result.fail(HttpChat.requestError(provider, tools.failure.message))
  return Result.succeed({
    ...options.parameters,
    model: options.model,
    ...transcript(request.messages),
    ...(tools.success.length === 0 ? {} : { tools: tools.success })
  })
}

/**
 * `body` with the structured answer `request.output` asks for under `field`, written by `format`
 * (the provider's dialect, strict mode as for tools); fails when the schema cannot be exported.
 */
export const withOutput = <Body extends object, Format>(
  provider: string,
  body: Result.Result<Body, ChatModelError>,
  request: Request,
  format: (output: NonNullable<Request["output"]>) => Result.Result<Format, ProviderExportError>,
  place: (body: Body, format: Format) => Body
): Result.Result<Body, ChatModelError> =>
  request.output === undefined ? body : Result.flatMap(body, (encoded) =>
    Result.match(format(request.output!), {
      onSuccess: (exported) => Result.succeed(place(encoded, exported)),
      onFailure: (error) => Result.fail(HttpChat.requestError(provider, error.message))
    }))

/**
 * The specs a call's arguments are read against: the request's tools (and its deferred ones, under
 * tool search), or none when strict mode is off (no nulls to undo).
 */
export type Specs = Request["tools"] | undefined

/** An adapter's wire format, given the specs its answers are read against (and the request). */
export interface Wire<Body> {
  readonly encode: (request: Request) => Result.Result<Body, ChatModelError>
  readonly decode: (json: unknown, specs: Specs, request: Request) => Result.Result<Response, ChatModelError>
  readonly stream: (body: Body, specs: Specs, request: Request) => HttpModel.Sse
  /** The adapter sends `Request.toolSearch` in the provider's form (`ChatModel.toolSearch`). */
  readonly toolSearch?: boolean
}

/** The `HttpModel.Spec` of an OpenAI adapter named `name`, posting to `{baseUrl}/{path}` with the bearer key. */
export const spec = <Body>(
  provider: string,
  name: string,
  path: string,
  options: Options,
  wire: Wire<Body>
): HttpModel.Spec<Body> => {
  const specsOf = (request: Request): Specs =>
    options.strict === false
      ? undefined
      : request.toolSearch === undefined
      ? request.tools
      : [...request.tools, ...request.toolSearch.deferred]
  return {
    name,
    structuredOutput: true,
    ...(wire.toolSearch === true ? { toolSearch: true } : {}),
    // strict mode sends null for an optional property of the answer: absent again, as for tool arguments
    ...(options.strict === false ? {} : {
      finish: (response: Response, request: Request) =>
        request.output === undefined || response.toolCalls.length > 0
          ? response
          : { ...response, text: normalizeAnswer(request.output, response.text) }
    }),
    model: options.model,
    post: HttpChat.postOptions(
      provider,
      options,
      `${(options.baseUrl ?? defaultBaseUrl).replace(/\/+$/, "")}/${path}`,
      { authorization: `Bearer ${Redacted.value(options.apiKey)}` }
    ),
    encode: wire.encode,
    decode: (json, request) => wire.decode(json, specsOf(request), request),
    stream: (body, request) => wire.stream(body, specsOf(request), request)
  }
}
