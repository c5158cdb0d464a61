/**
 * scripts/folder-walk.ts on a tree of four folders (test/fixtures/folderWalk): an HTTP handler
 * calls a settlement service through its Shape, which calls a store service through its Shape,
 * handing it a judge (a function an Effect answered with) and a notice built by a factory, both of
 * which the store calls back.
 * The crossings are checked line by line, so a lost resolution or a lost callback fails here.
 */
import { describe, expect, test } from "bun:test"
import { resolve } from "node:path"
import { loadProject, type Project } from "../scripts/callGraph.js"
import { describeEdge, walk } from "../scripts/folder-walk.js"

const FIXTURE = resolve(import.meta.dir, "fixtures/folderWalk")
const ROOT = "src/http/handlers.ts#handle:settle"
// Building the fixture's program reads Effect's declarations: seconds on a loaded machine.
const LOAD_MS = 30_000

let loaded: Project | undefined
const project = () => {
  loaded ??= loadProject(FIXTURE)
  return loaded
}

describe("folder walk", () => {
  test(
    "reports every crossing of one settle, the store's two callbacks into settlement among them",
    () => {
      const result = walk(project(), ROOT, { into: "settlement" })
      expect(result.root.name).toBe("routes.handle:settle")
      expect(result.all.crossings.map(describeEdge)).toEqual([
        "src/http/handlers.ts:routes.handle:settle -> src/settlement/Settlement.ts:make.settle [call]",
        "src/settlement/Settlement.ts:make.settle -> src/domain/ids.ts:normalise [call]",
        "src/settlement/Settlement.ts:make.settle -> src/store/Journal.ts:make.complete [call]",
        "src/settlement/Settlement.ts:make.settle -> src/store/Journal.ts:make.reserve [call]",
        "src/store/Journal.ts:make.complete -> src/settlement/Settlement.ts:make.notices.after [callback]",
        "src/store/Journal.ts:make.reserve -> src/settlement/budget.ts:makeBudget [callback]"
      ])
      // The handler, settle, normalise, reserve, total, complete, makeBudget, notices and its
      // `after`; not `audit` nor the other endpoint, which the settle never runs.
      expect(result.all.nodes).toBe(9)
      expect(result.unimplemented).toEqual([])
      expect(result.all.callbacks).toBe(2)
      expect(result.all.intoFolder).toBe(3)
      expect(result.all.pairs).toEqual([
        { from: "settlement", to: "store", count: 2 },
        { from: "store", to: "settlement", count: 2 },
        { from: "http", to: "settlement", count: 1 },
        { from: "settlement", to: "domain", count: 1 }
      ])
    },
    LOAD_MS
  )

  test(
    "the pipeline figure leaves the helper folders out",
    () => {
      const result = walk(project(), ROOT, { into: "settlement" })
      expect(result.pipelineFolders).toEqual(["http", "settlement", "store"])
      expect(result.pipeline.nodes).toBe(8)
      expect(result.pipeline.crossings.length).toBe(5)
      expect(result.pipeline.crossings.some((e) => e.to.folder === "domain")).toBe(false)
      const storeOnly = walk(project(), ROOT, { pipeline: ["settlement", "store"] })
      expect(storeOnly.pipeline.crossings.map(describeEdge)).toEqual([
        "src/settlement/Settlement.ts:make.settle -> src/store/Journal.ts:make.complete [call]",
        "src/settlement/Settlement.ts:make.settle -> src/store/Journal.ts:make.reserve [call]",
        "src/store/Journal.ts:make.complete -> src/settlement/Settlement.ts:make.notices.after [callback]",
        "src/store/Journal.ts:make.reserve -> src/settlement/budget.ts:makeBudget [callback]"
      ])
      // Without --into, the root's own folder: nothing comes back into http.
      expect(storeOnly.into).toBe("http")
      expect(storeOnly.all.intoFolder).toBe(0)
    },
    LOAD_MS
  )

  test(
    "a root is named by file and name, and an unknown one is refused with what the file holds",
    () => {
      expect(walk(project(), "src/settlement/Settlement.ts#settle").root.name).toBe("make.settle")
      expect(walk(project(), "src/settlement/Settlement.ts#make.notices").all.nodes).toBe(1)
      expect(() => walk(project(), "src/http/handlers.ts#handle:refund")).toThrow(
        "no functions named handle:refund in src/http/handlers.ts: handlers.handle, routes.handle:settle, routes.handle:status"
      )
      expect(() => walk(project(), "src/http/handlers.ts")).toThrow("a root is file#name")
    },
    LOAD_MS
  )
})
