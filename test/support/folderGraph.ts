/**
 * The graph of capability folders (`src/<folder>/`) drawn from file imports, and the loops in it:
 * the import-rule test holds that the folders form floors, none importing back up.
 */

/** One import of a project module: both ends as project paths (`src/store/ResourceReadsRepo.ts`). */
export interface Edge {
  readonly from: string
  readonly to: string
}

/** The capability folder of a project path (`src/http/handlers/x402.ts` is `http`); a file directly under src/ has none. */
export const folderOf = (path: string): string | null => {
  const parts = path.split("/")
  return parts.length > 2 && parts[0] === "src" ? parts[1]! : null
}

/** Which capability folder imports which, each arrow with the file imports that make it. */
export const folderGraph = (
  edges: ReadonlyArray<Edge>
): ReadonlyMap<string, ReadonlyMap<string, ReadonlyArray<Edge>>> => {
  const graph = new Map<string, Map<string, Array<Edge>>>()
  for (const edge of edges) {
    const from = folderOf(edge.from)
    const to = folderOf(edge.to)
    if (from === null || to === null || from === to) continue
    const arrows = graph.get(from) ?? new Map<string, Array<Edge>>()
    graph.set(from, arrows)
    arrows.set(to, [...(arrows.get(to) ?? []), edge])
  }
  return graph
}

type FolderGraph = ReadonlyMap<string, ReadonlyMap<string, unknown>>

/**
 * The folders that import each other, directly or round a longer loop: the strongly connected
 * components of the folder graph (Tarjan), each of more than one folder, sorted by name.
 */
export const tangledFolders = (graph: FolderGraph): ReadonlyArray<ReadonlyArray<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const components: Array<ReadonlyArray<string>> = []
  const visit = (folder: string): void => {
    index.set(folder, index.size)
    low.set(folder, index.get(folder)!)
    stack.push(folder)
    for (const next of graph.get(folder)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(folder, Math.min(low.get(folder)!, low.get(next)!))
      } else if (stack.includes(next)) low.set(folder, Math.min(low.get(folder)!, index.get(next)!))
    }
    if (low.get(folder) !== index.get(folder)) return
    const component: Array<string> = []
    for (let top = stack.pop(); top !== undefined; top = top === folder ? undefined : stack.pop()) component.push(top)
    if (component.length > 1) components.push(component.sort())
  }
  for (const folder of [...graph.keys()].sort()) if (!index.has(folder)) visit(folder)
  return components.sort((a, b) => a[0]!.localeCompare(b[0]!))
}

/** The shortest loop from a folder back to itself (breadth first), as `[a, b, a]`; empty when there is none. */
const shortestCycle = (graph: FolderGraph, start: string): ReadonlyArray<string> => {
  const cameFrom = new Map<string, string>()
  const queue = [start]
  for (let folder = queue.shift(); folder !== undefined; folder = queue.shift()) {
    for (const next of [...(graph.get(folder)?.keys() ?? [])].sort()) {
      if (next === start) {
        const path = [folder]
        while (path[0] !== start) path.unshift(cameFrom.get(path[0]!)!)
        return [...path, start]
      }
      if (!cameFrom.has(next)) {
        cameFrom.set(next, folder)
        queue.push(next)
      }
    }
  }
  return []
}

/**
 * One line per tangle: its folders, then the shortest loop through its first folder with the
 * file import behind each arrow, so a failure says which import to undo.
 */
export const describeTangles = (edges: ReadonlyArray<Edge>): ReadonlyArray<string> => {
  const graph = folderGraph(edges)
  return tangledFolders(graph).map((component) => {
    const loop = shortestCycle(graph, component[0]!)
    const arrows = loop.slice(1).map((to, i) => {
      const { from, to: target } = graph.get(loop[i]!)!.get(to)![0]!
      return `${from} imports ${target}`
    })
    return `{${component.join(", ")}}: ${loop.join(" -> ")} (${arrows.join("; ")})`
  })
}
