// vitest resolves packages with the `module` condition, which picks `@opentelemetry/api`'s ESM
// build that Node cannot load (extensionless imports); `ai` and the OpenTelemetry SDK import it.
// Resolve `@opentelemetry/*` without that condition. Import this module first.
import { registerHooks } from "node:module"

registerHooks({
  resolve: (specifier, context, next) =>
    next(
      specifier,
      specifier.startsWith("@opentelemetry/")
        ? { ...context, conditions: context.conditions.filter((c) => c !== "module") }
        : context
    )
})
