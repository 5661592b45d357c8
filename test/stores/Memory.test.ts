/** The memory and file-system backends run the store conformance suite. */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { afterAll } from "@effect/vitest"
import { Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { StoreRegistry } from "../../src/runtime/StoreRegistry.ts"
import { storeConformance } from "../support/storeConformance.ts"

const root = mkdtempSync(join(tmpdir(), "tinyagents-fs-store-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

storeConformance("memory", () => StoreRegistry.layerMemory)
storeConformance(
  "file system",
  () => StoreRegistry.layerFileSystem(root).pipe(Layer.provide([NodeFileSystem.layer, NodePath.layer])),
  { largeValueBytes: 1024 * 1024, oddKeysListed: "named", loneSurrogateValues: "replaced" }
)
