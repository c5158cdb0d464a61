/**
 * The edges one node of src/ adds to the call graph of scripts/folder-walk.ts: its calls, what its
 * arguments hand to their callees (callbacks among them) and what it holds (docs/architecture.md,
 * "Counting folder crossings").
 */
import ts from "typescript"
import {
  bodyOf,
  type EdgeKind,
  enclosingNode,
  functionOf,
  type GraphEdge,
  type GraphNode,
  isFunctionLike,
  LAZY,
  returnedExpressions,
  unwrap
} from "./callGraph.js"
import type { Resolver } from "./callResolver.js"

/** One use of a function of src/ handed to a call: `inline` when it is written in the argument itself. */
interface Handed {
  readonly node: GraphNode
  readonly inline: boolean
}

/** The edges one node's body adds to the graph, found by walking it once. */
export class EdgeScanner {
  constructor(readonly resolver: Resolver) {}

  private get project() {
    return this.resolver.project
  }

  private runnable(value: ts.Expression) {
    const type = this.project.checker.getTypeAtLocation(value)
    return type.getCallSignatures().length > 0 || LAZY.has(type.aliasSymbol?.name ?? type.getSymbol()?.name ?? "")
  }

  /**
   * The functions of src/ an argument hands over: a function written there (its own node, or the
   * node it is written in), a name resolving to a node, an object or array literal of them, and a
   * call of a function of the caller's folder that answers with such (a guard built by a factory).
   */
  handed(argument: ts.Expression, caller: GraphNode, seen: Set<ts.Node>): ReadonlyArray<Handed> {
    const value = unwrap(argument)
    if (seen.has(value)) return []
    seen.add(value)
    if (isFunctionLike(value)) {
      const node = this.project.nodeAt.get(value) ?? enclosingNode(this.project, value)
      return node === undefined ? [] : [{ node, inline: true }]
    }
    if (ts.isIdentifier(value) || ts.isPropertyAccessExpression(value) || ts.isElementAccessExpression(value)) {
      const nodes = this.resolver.expression(value, new Set())
      // Only a function or an Effect is run by whoever gets it; a value a function computed is data.
      if (nodes.length === 0 || !this.runnable(value)) return []
      return nodes.map((node) => ({ node, inline: false }))
    }
    if (ts.isObjectLiteralExpression(value)) {
      return value.properties.flatMap((property): ReadonlyArray<Handed> => {
        const own = this.project.nodeAt.get(property)
        // `{ origins: items.map(...) }` hands data, computed by the caller.
        if (own !== undefined) return this.computedInPlace(own) ? [] : [{ node: own, inline: true }]
        if (ts.isPropertyAssignment(property)) return this.handed(property.initializer, caller, seen)
        if (ts.isShorthandPropertyAssignment(property)) return this.handed(property.name, caller, seen)
        return []
      })
    }
    if (ts.isArrayLiteralExpression(value)) return value.elements.flatMap((e) => this.handed(e, caller, seen))
    if (ts.isConditionalExpression(value)) {
      return [...this.handed(value.whenTrue, caller, seen), ...this.handed(value.whenFalse, caller, seen)]
    }
    if (ts.isCallExpression(value)) {
      return this.resolver
        .callee(value)
        .filter((factory) => factory.folder === caller.folder)
        .flatMap((factory) => {
          const fn = functionOf(factory.declaration)
          if (fn === undefined) return []
          return returnedExpressions(fn).flatMap((answer) => {
            const inner = unwrap(answer)
            const carries = isFunctionLike(inner) || ts.isObjectLiteralExpression(inner) || ts.isCallExpression(inner)
            return carries ? this.handed(inner, factory, seen) : []
          })
        })
    }
    return []
  }

  /**
   * A binding whose value is computed where it is written (`const reading = yield* Effect.try(...)`,
   * `const ids = rows.map(...)`), unlike a function or a description run later (an Effect, a Layer).
   */
  private computedInPlace(node: GraphNode): boolean {
    const declaration = node.declaration
    const initializer =
      ts.isVariableDeclaration(declaration) ||
      ts.isPropertyAssignment(declaration) ||
      ts.isPropertyDeclaration(declaration)
        ? declaration.initializer
        : undefined
    if (initializer === undefined) return false
    const value = unwrap(initializer)
    if (isFunctionLike(value)) return false
    if (ts.isYieldExpression(value) || ts.isAwaitExpression(value)) return true
    const type = this.project.checker.getTypeAtLocation(value)
    const name = type.aliasSymbol?.name ?? type.getSymbol()?.name ?? ""
    return type.getCallSignatures().length === 0 && !LAZY.has(name)
  }

  /** Every edge `node`'s body adds: its calls, what its arguments hand to their callees, what it holds. */
  scan(node: GraphNode): ReadonlyArray<GraphEdge> {
    const edges: Array<GraphEdge> = []
    const add = (from: GraphNode, to: GraphNode, kind: EdgeKind) => {
      if (from !== to) edges.push({ from, to, kind })
    }
    const call = (expression: ts.CallExpression | ts.NewExpression) => {
      const callees = this.resolver.callee(expression)
      for (const callee of callees) add(node, callee, "call")
      for (const argument of expression.arguments ?? []) {
        for (const { node: handed, inline } of this.handed(argument, node, new Set())) {
          // A library function runs what it is handed on the caller's behalf.
          if (callees.length === 0) add(node, handed, "call")
          for (const callee of callees) {
            const back = handed.folder === node.folder && callee.folder !== node.folder
            if (back) add(callee, handed, "callback")
            else if (!(inline && handed === node)) add(callee, handed, "call")
          }
        }
      }
    }
    const visit = (at: ts.Node, inArgument: boolean): void => {
      const nested = this.project.nodeAt.get(at)
      if (nested !== undefined && nested !== node) {
        // A function written in a call's argument (`Option.match(x, { onNone, onSome })`) runs when
        // that call runs it, and a binding computed in place runs where it is written; a function
        // declared inside a function is called by its name.
        if (inArgument || this.computedInPlace(nested)) add(node, nested, "call")
        return
      }
      if (ts.isCallExpression(at) || ts.isNewExpression(at)) call(at)
      if (ts.isYieldExpression(at) && at.asteriskToken !== undefined && at.expression !== undefined) {
        const operand = unwrap(at.expression)
        if (!ts.isCallExpression(operand)) {
          for (const target of this.resolver.expression(operand, new Set())) add(node, target, "call")
        }
      }
      const args: ReadonlyArray<ts.Node> = ts.isCallExpression(at) || ts.isNewExpression(at) ? (at.arguments ?? []) : []
      const scope = ts.isFunctionLike(at) ? false : inArgument
      ts.forEachChild(at, (child) => visit(child, scope || args.includes(child)))
    }
    const body = bodyOf(node.declaration)
    if (body !== undefined) visit(body, false)
    return edges
  }
}
