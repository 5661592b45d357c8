/**
 * What every provider's `toolDefinitions` shares: the specs exported in order,
 * each under a name checked against the provider's rule and distinct from the
 * others, the first failing tool failing the whole export; and the Effect form
 * of a `toolDefinitionsResult`. What one tool looks like is the provider's.
 */
import { Effect, Result } from "effect"
import type { ToolSpec } from "../../contract/Tool.ts"
import type { Provider, ProviderExportError } from "../ProviderExportError.ts"
import * as Names from "./names.ts"

/** The name a tool is sent under, when the provider offers no choice: its canonical name. */
export const canonicalName = (spec: ToolSpec): string => spec.name

/**
 * Exports each spec in order: `nameOf` picks the name to send, which must pass
 * `rule` and be unused so far; `exportOne` builds the provider's tool from the
 * spec and that name.
 */
export const exportEach = <A>(
  provider: Provider,
  rule: Names.NameRule,
  specs: ReadonlyArray<ToolSpec>,
  nameOf: (spec: ToolSpec) => string,
  exportOne: (spec: ToolSpec, name: string) => Result.Result<A, ProviderExportError>
): Result.Result<Array<A>, ProviderExportError> => {
  const unique = Names.makeUniqueness(provider)
  const out: Array<A> = []
  for (const spec of specs) {
    const name = Names.check(provider, rule, nameOf(spec)).pipe(Result.flatMap(unique))
    if (Result.isFailure(name)) return Result.fail(name.failure)
    const exported = exportOne(spec, name.success)
    if (Result.isFailure(exported)) return Result.fail(exported.failure)
    out.push(exported.success)
  }
  return Result.succeed(out)
}

/** A provider's `toolDefinitions`: its `toolDefinitionsResult`, run when the Effect runs. */
export const toEffect = <Options, A>(
  exportResult: (specs: ReadonlyArray<ToolSpec>, options?: Options) => Result.Result<A, ProviderExportError>
) =>
(specs: ReadonlyArray<ToolSpec>, options?: Options): Effect.Effect<A, ProviderExportError> =>
  Effect.suspend(() => Effect.fromResult(exportResult(specs, options)))
