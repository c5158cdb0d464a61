/**
 * Counts the folder boundaries one path through the code crosses: from a root function, every
 * function of src/ it reaches through calls (resolved by the type checker, through imports, Shapes
 * and callbacks), and the edges among them that go from one folder of src/ to another. What counts
 * as a node, an edge and a callback: docs/architecture.md, "Counting folder crossings".
 *
 *   npx bun scripts/folder-walk.ts [--project DIR] [--pipeline a,b,...] [--into FOLDER] <file#name>
 *
 * `file#name` names the root: a file of the project and a function in it, by its full name
 * (`make.probeRecord`) or its last part when that is unique in the file (`probeRecord`); an HttpApi
 * handler is `handle:<endpoint>`. `npm run walk:settle` and `npm run walk:probe` name this tree's.
 */
import { resolve } from "node:path"
import { EdgeScanner } from "./callEdges.js"
import { type GraphEdge, type GraphNode, loadProject, type Project } from "./callGraph.js"
import { Resolver } from "./callResolver.js"

/** Folders of pure helpers and process plumbing, left out of the narrower figure unless told otherwise. */
export const HELPER_FOLDERS = ["domain", "telemetry", "redaction", "encoding", "config", "lifecycle"] as const

/** One figure: the nodes reached, the edges among them that cross folders, of which callbacks and into the root's folder. */
export interface Figure {
  readonly nodes: number
  readonly crossings: ReadonlyArray<GraphEdge>
  readonly callbacks: number
  readonly intoFolder: number
  readonly pairs: ReadonlyArray<{ readonly from: string; readonly to: string; readonly count: number }>
}

export interface Walk {
  readonly root: GraphNode
  /** The folder whose incoming crossings are counted: the root's, unless told otherwise. */
  readonly into: string
  readonly all: Figure
  readonly pipeline: Figure
  readonly pipelineFolders: ReadonlyArray<string>
  /** Shapes the walk called through without finding what implements them: their calls are not counted. */
  readonly unimplemented: ReadonlyArray<string>
}

/** The root `file#name` names, or an error listing what the file holds. */
export const findRoot = (project: Project, spec: string): GraphNode => {
  const hash = spec.lastIndexOf("#")
  if (hash <= 0) throw new Error(`a root is file#name, got "${spec}"`)
  const file = spec.slice(0, hash)
  const name = spec.slice(hash + 1)
  const inFile = project.nodes.filter((n) => n.file === file)
  if (inFile.length === 0) throw new Error(`no function of src/ in ${file}`)
  const exact = inFile.filter((n) => n.name === name)
  const matches = exact.length > 0 ? exact : inFile.filter((n) => n.name.endsWith(`.${name}`))
  if (matches.length === 1) return matches[0]!
  const listed = (matches.length > 1 ? matches : inFile).map((n) => n.name).join(", ")
  throw new Error(`${matches.length > 1 ? "several" : "no"} functions named ${name} in ${file}: ${listed}`)
}

/** Every node reachable from `root`, each node's body scanned once, and the edges those scans found. */
const reach = (project: Project, root: GraphNode) => {
  const resolver = new Resolver(project)
  const scanner = new EdgeScanner(resolver)
  const reached = new Set<GraphNode>([root])
  const edges = new Map<string, GraphEdge>()
  const queue = [root]
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    for (const edge of scanner.scan(next)) {
      edges.set(`${edge.from.id}>${edge.to.id}>${edge.kind}`, edge)
      // A callback's caller is a callee of the node scanned, so both ends are reached.
      for (const end of [edge.from, edge.to]) {
        if (!reached.has(end)) {
          reached.add(end)
          queue.push(end)
        }
      }
    }
  }
  return { reached, edges: [...edges.values()], unimplemented: [...resolver.unimplemented].sort() }
}

const label = (n: GraphNode) => `${n.file}:${n.name}`

/** `callerFile:name -> calleeFile:name [kind]`, the line a reader checks a crossing by. */
export const describeEdge = (e: GraphEdge) => `${label(e.from)} -> ${label(e.to)} [${e.kind}]`

const figure = (
  nodes: ReadonlySet<GraphNode>,
  edges: ReadonlyArray<GraphEdge>,
  into: string,
  keep: (n: GraphNode) => boolean
): Figure => {
  const crossings = edges
    .filter((e) => e.from.folder !== e.to.folder && keep(e.from) && keep(e.to))
    .sort((a, b) => describeEdge(a).localeCompare(describeEdge(b)))
  const counts = new Map<string, number>()
  for (const e of crossings) {
    const key = `${e.from.folder} -> ${e.to.folder}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  const pairs = [...counts]
    .map(([key, count]) => {
      const [from, to] = key.split(" -> ") as [string, string]
      return { from, to, count }
    })
    .sort((a, b) => b.count - a.count || `${a.from}${a.to}`.localeCompare(`${b.from}${b.to}`))
  return {
    nodes: [...nodes].filter(keep).length,
    crossings,
    callbacks: crossings.filter((e) => e.kind === "callback").length,
    intoFolder: crossings.filter((e) => e.to.folder === into && e.from.folder !== into).length,
    pairs
  }
}

export interface WalkOptions {
  /** The folders of the narrower figure; default: every folder but HELPER_FOLDERS. */
  readonly pipeline?: ReadonlyArray<string> | undefined
  /** The folder whose incoming crossings are counted; default: the root's. */
  readonly into?: string | undefined
}

/** Walks from `rootSpec` and counts both figures. */
export const walk = (project: Project, rootSpec: string, options: WalkOptions = {}): Walk => {
  const root = findRoot(project, rootSpec)
  const into = options.into ?? root.folder
  const { reached, edges, unimplemented } = reach(project, root)
  const folders = [...new Set(project.nodes.map((n) => n.folder))].sort()
  const pipelineFolders =
    options.pipeline ?? folders.filter((f) => !(HELPER_FOLDERS as ReadonlyArray<string>).includes(f))
  return {
    root,
    into,
    all: figure(reached, edges, into, () => true),
    pipeline: figure(reached, edges, into, (n) => pipelineFolders.includes(n.folder)),
    pipelineFolders,
    unimplemented
  }
}

const report = (w: Walk, projectRoot: string): string => {
  const row = (name: string, all: number, pipeline: number) =>
    `${name.padEnd(40)}${String(all).padStart(12)}${String(pipeline).padStart(18)}`
  const pairs = (f: Figure) => f.pairs.map((p) => `  ${`${p.from} -> ${p.to}`.padEnd(36)}${p.count}`)
  return [
    `project: ${projectRoot}`,
    `root: ${w.root.file}:${w.root.name} (folder ${w.root.folder})`,
    `pipeline folders: ${w.pipelineFolders.join(", ")}`,
    "",
    `${"".padEnd(40)}${"all folders".padStart(12)}${"pipeline folders".padStart(18)}`,
    row("reachable nodes", w.all.nodes, w.pipeline.nodes),
    row("cross-folder edges", w.all.crossings.length, w.pipeline.crossings.length),
    row("  of which callbacks", w.all.callbacks, w.pipeline.callbacks),
    row(`  of which into ${w.into} from another`, w.all.intoFolder, w.pipeline.intoFolder),
    ...w.unimplemented.map(
      (shape) => `warning: no implementation found for ${shape}; calls through it are not counted`
    ),
    "",
    "folder pairs, all folders:",
    ...pairs(w.all),
    "",
    "folder pairs, pipeline folders:",
    ...pairs(w.pipeline),
    "",
    "crossings, all folders (the pipeline's are those between its folders):",
    ...w.all.crossings.map(describeEdge),
    ""
  ].join("\n")
}

const parseArgs = (argv: ReadonlyArray<string>) => {
  let project = "."
  let pipeline: ReadonlyArray<string> | undefined
  let into: string | undefined
  const roots: Array<string> = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === "--project") project = argv[++i] ?? ""
    else if (arg === "--into") into = argv[++i]
    else if (arg === "--pipeline") pipeline = (argv[++i] ?? "").split(",").filter((f) => f !== "")
    else roots.push(arg)
  }
  return { project, pipeline, into, roots }
}

if (import.meta.main) {
  const { project, pipeline, into, roots } = parseArgs(process.argv.slice(2))
  if (roots.length === 0) {
    process.stderr.write(
      "usage: bun scripts/folder-walk.ts [--project DIR] [--pipeline a,b,...] [--into FOLDER] <file#name>...\n"
    )
    process.exit(2)
  }
  const loaded = loadProject(resolve(project))
  for (const root of roots) process.stdout.write(report(walk(loaded, root, { pipeline, into }), loaded.root))
}
