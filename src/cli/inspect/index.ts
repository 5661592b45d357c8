/**
 * `tinyagents/inspect`: the run inspector, a local web page over a source of runs (see
 * docs/inspect.md). `tinyagents inspect <source>` serves it for a file or a journal; {@link layerLive}
 * serves it from inside an application, for its runs as they happen: an `EventSink` whose events
 * stream to the page (Server-Sent Events). The modules: `model` (events → runs, turns and calls),
 * `sources` (the readers), `html` (the pages), `server` (the routes).
 */
import { Console, Context, Effect, Layer } from "effect"
import { EventSink } from "../../runtime/EventSink.ts"
import * as Server from "./server.ts"
import * as Sources from "./sources.ts"

export * as Html from "./html.ts"
export * as Model from "./model.ts"
export * as Server from "./server.ts"
export * as Sources from "./sources.ts"

/** Where a live inspector ({@link layerLive}) is served. */
export class Inspector extends Context.Service<Inspector, Server.Served>()("tinyagents/Inspector") {}

/** Options of {@link layerLive}. */
export interface LiveOptions extends Server.ServeOptions {
  /** Told the page's URL once it is served. Default: a line on stderr. */
  readonly onReady?: ((url: string) => void) | undefined
}

/**
 * An `EventSink` that serves the inspector (127.0.0.1, a free port unless `port` is given) for the
 * runs whose events it receives, while the layer is in use: the page shows each event as it
 * arrives. Combine it with another sink when the events should also go elsewhere. Also provides
 * {@link Inspector} (the URL).
 */
export const layerLive = (options: LiveOptions = {}): Layer.Layer<EventSink | Inspector, Sources.SourceError> =>
  Layer.effectContext(Effect.gen(function*() {
    const { sink, source } = yield* Sources.live()
    const served = yield* Server.serve(source, options)
    if (options.onReady === undefined) yield* Console.error(`tinyagents inspect: live run at ${served.url}`)
    else options.onReady(served.url)
    return Context.make(EventSink, sink).pipe(Context.add(Inspector, served))
  }))
