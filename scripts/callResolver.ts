/**
 * Resolves what a call or a name of src/ stands for, for scripts/folder-walk.ts: through imports,
 * re-exports and destructuring, and from a service's Shape to the value implementing it
 * (docs/architecture.md, "Counting folder crossings").
 */
import { relative } from "node:path"
import ts from "typescript"
import {
  enclosingNode,
  type GraphNode,
  isFunctionLike,
  ownName,
  type Project,
  returnedExpressions,
  unwrap
} from "./callGraph.js"

/** A Shape's member: `readonly settle: (...) => ...` of `interface SettlementShape` (or `type XShape = {...}`). */
const shapeOf = (member: ts.Node): ts.InterfaceDeclaration | ts.TypeAliasDeclaration | undefined => {
  if (!ts.isPropertySignature(member) && !ts.isMethodSignature(member)) return undefined
  const owner = ts.isTypeLiteralNode(member.parent) ? member.parent.parent : member.parent
  return (ts.isInterfaceDeclaration(owner) || ts.isTypeAliasDeclaration(owner)) && owner.name.text.endsWith("Shape")
    ? owner
    : undefined
}

/** A test implementation shipped in src/ (`static Test`, `StoreTest`) is not the path a request takes. */
const inTestDouble = (node: ts.Node, source: ts.SourceFile): boolean => {
  for (let at: ts.Node | undefined = node; at !== undefined; at = at.parent) {
    const name = ownName(at, source)
    if (name?.endsWith("Test")) return true
  }
  return false
}

/** Where the functions of src/ are resolved: the graph, its caches and the type checker. */
export class Resolver {
  private readonly implementations = new Map<ts.Node, ReadonlyArray<ts.Expression>>()
  /** Shapes called through whose implementation was not found (`file:Name`): their calls are lost. */
  readonly unimplemented = new Set<string>()

  constructor(readonly project: Project) {}

  private get checker() {
    return this.project.checker
  }

  private inSrc(node: ts.Node) {
    return this.project.sources.includes(node.getSourceFile())
  }

  /** Whether a type annotation names `shape` (`: SettlementShape`, `satisfies SettlementShape`). */
  private names(type: ts.TypeNode | undefined, shape: ts.Symbol): boolean {
    if (type === undefined || !ts.isTypeReferenceNode(type)) return false
    const name = ts.isIdentifier(type.typeName) ? type.typeName : type.typeName.right
    if (name.text !== shape.name) return false
    const found = this.checker.getSymbolAtLocation(name)
    return (
      (found !== undefined && found.flags & ts.SymbolFlags.Alias ? this.checker.getAliasedSymbol(found) : found) ===
      shape
    )
  }

  /** Values of one file written as `shape`: `satisfies` it, typed with it, returned as it, or handed to `Tag.of`. */
  private typedAs(source: ts.SourceFile, shape: ts.Symbol): Array<ts.Expression> {
    const found: Array<ts.Expression> = []
    if (!source.text.includes(shape.name)) return found
    const visit = (node: ts.Node): void => {
      if (ts.isSatisfiesExpression(node) && this.names(node.type, shape)) found.push(node.expression)
      else if (ts.isVariableDeclaration(node) && node.initializer && this.names(node.type, shape)) {
        found.push(node.initializer)
      } else if (ts.isFunctionLike(node) && this.names(node.type, shape)) {
        found.push(...returnedExpressions(node))
      } else if (ts.isCallExpression(node) && isOfCall(node)) {
        const contextual = this.checker.getContextualType(node.arguments[0]!)
        if (contextual?.symbol === shape || contextual?.aliasSymbol === shape) found.push(node.arguments[0]!)
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
    return found.filter((e) => !inTestDouble(e, source))
  }

  /** What the functions of one file (those `within` holders so named) return that is assignable to `shape`. */
  private returnedAs(source: ts.SourceFile, shapeType: ts.Type, within: (holder: string) => boolean) {
    const found: Array<ts.Expression> = []
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && within(enclosingNode(this.project, node)?.name.split(".")[0] ?? "")) {
        for (const answer of returnedExpressions(node)) {
          const type = this.checker.getTypeAtLocation(answer)
          const vague = type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown | ts.TypeFlags.Never)
          if (!vague && this.checker.isTypeAssignableTo(this.checker.getWidenedType(type), shapeType))
            found.push(answer)
        }
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
    return found.filter((e) => !inTestDouble(e, source))
  }

  /**
   * The values implementing a Shape: in the Shape's file, those written as it (`satisfies`, a type,
   * `Tag.of`); failing those, what that file's `make` (else any function there) returns that is
   * assignable to it; failing
   * those, the values written as it in any file of src/.
   */
  private implementationsOf(shape: ts.InterfaceDeclaration | ts.TypeAliasDeclaration) {
    const cached = this.implementations.get(shape)
    if (cached !== undefined) return cached
    const symbol = this.checker.getSymbolAtLocation(shape.name)
    let found: ReadonlyArray<ts.Expression> = []
    if (symbol !== undefined) {
      const home = shape.getSourceFile()
      const shapeType = this.checker.getDeclaredTypeOfSymbol(symbol)
      // A value typed only as the Shape (`() => makeReader(options)`) shows no implementation of its own.
      const own = (values: ReadonlyArray<ts.Expression>) =>
        values.filter((value) => {
          const type = this.checker.getTypeAtLocation(value)
          return type.symbol !== symbol && type.aliasSymbol !== symbol
        })
      found = own(this.typedAs(home, symbol))
      if (found.length === 0) found = own(this.returnedAs(home, shapeType, (holder) => holder.startsWith("make")))
      if (found.length === 0) found = own(this.returnedAs(home, shapeType, () => true))
      if (found.length === 0) {
        found = own(this.project.sources.flatMap((s) => (s === home ? [] : this.typedAs(s, symbol))))
      }
    }
    this.implementations.set(shape, found)
    if (found.length === 0) {
      this.unimplemented.add(`${relative(this.project.root, shape.getSourceFile().fileName)}:${shape.name.text}`)
    }
    return found
  }

  /** The nodes a symbol stands for, following imports, re-exports, bindings and Shapes. */
  symbol(symbol: ts.Symbol | undefined, seen: Set<ts.Node>): ReadonlyArray<GraphNode> {
    if (symbol === undefined) return []
    const target = symbol.flags & ts.SymbolFlags.Alias ? this.checker.getAliasedSymbol(symbol) : symbol
    return (target.declarations ?? []).flatMap((d) => this.declaration(d, seen))
  }

  /** The nodes a declaration stands for: itself when it is one, else what its value resolves to. */
  declaration(declaration: ts.Node, seen: Set<ts.Node>): ReadonlyArray<GraphNode> {
    if (seen.has(declaration) || !this.inSrc(declaration)) return []
    seen.add(declaration)
    const node = this.project.nodeAt.get(declaration)
    if (node !== undefined) return [node]
    if (ts.isShorthandPropertyAssignment(declaration)) {
      return this.symbol(this.checker.getShorthandAssignmentValueSymbol(declaration), seen)
    }
    if ((ts.isPropertyAssignment(declaration) || ts.isVariableDeclaration(declaration)) && declaration.initializer) {
      return this.expression(declaration.initializer, seen)
    }
    if (ts.isBindingElement(declaration)) {
      // `const { transaction } = yield* StoreTransactions`: the member of the destructured value's type.
      const key = declaration.propertyName ?? declaration.name
      if (!ts.isIdentifier(key)) return []
      const whole = this.checker.getTypeAtLocation(declaration.parent)
      return this.symbol(whole.getProperty(key.text), seen)
    }
    if (ts.isFunctionTypeNode(declaration) && ts.isPropertySignature(declaration.parent)) {
      return this.declaration(declaration.parent, seen)
    }
    const shape = shapeOf(declaration)
    const memberName = shape === undefined ? undefined : (declaration as ts.PropertySignature | ts.MethodSignature).name
    if (shape !== undefined && memberName !== undefined && ts.isIdentifier(memberName)) {
      const member = memberName.text
      return this.implementationsOf(shape).flatMap((value) =>
        this.symbol(this.checker.getTypeAtLocation(value).getProperty(member), seen)
      )
    }
    return []
  }

  /**
   * The nodes an expression's value is: a function's own node (or the node it is written in), what
   * a name or member resolves to, and for a call, the function that made the value (a factory's
   * returned function is written inside the factory, so it belongs to it).
   */
  expression(expression: ts.Expression, seen: Set<ts.Node>): ReadonlyArray<GraphNode> {
    const value = unwrap(expression)
    if (isFunctionLike(value)) {
      const owner = enclosingNode(this.project, value)
      return owner === undefined ? [] : [owner]
    }
    if (ts.isIdentifier(value)) return this.symbol(this.checker.getSymbolAtLocation(value), seen)
    if (ts.isPropertyAccessExpression(value)) return this.symbol(this.checker.getSymbolAtLocation(value.name), seen)
    if (ts.isElementAccessExpression(value)) return this.symbol(this.checker.getSymbolAtLocation(value), seen)
    if (ts.isCallExpression(value)) return this.callee(value, seen)
    // `const nonceCheck = yield* makeNonceCheck`: the function an Effect answers with is written in it.
    if (ts.isYieldExpression(value) && value.asteriskToken !== undefined && value.expression !== undefined) {
      return this.expression(value.expression, seen)
    }
    return []
  }

  /** The nodes a call runs: its callee's symbol, else the declaration of the signature it resolved to. */
  callee(call: ts.CallExpression | ts.NewExpression, seen = new Set<ts.Node>()): ReadonlyArray<GraphNode> {
    const callee = unwrap(call.expression)
    // `factory(a)(b)`: `factory(a)` is a call of its own, and the function it returns belongs to `factory`.
    if (ts.isCallExpression(callee)) return []
    if (ts.isNewExpression(call)) {
      const declaration = this.checker.getResolvedSignature(call)?.declaration
      return declaration === undefined ? [] : this.declaration(declaration, seen)
    }
    const named = this.expression(callee, seen)
    if (named.length > 0) return named
    // A callee whose symbol is declared (a library's function, a parameter) needs no signature resolved.
    const name = ts.isPropertyAccessExpression(callee) ? callee.name : callee
    const symbol = this.checker.getSymbolAtLocation(name)
    const target =
      symbol !== undefined && symbol.flags & ts.SymbolFlags.Alias ? this.checker.getAliasedSymbol(symbol) : symbol
    if ((target?.declarations ?? []).length > 0) return []
    const declaration = this.checker.getResolvedSignature(call)?.declaration
    return declaration === undefined || isFunctionLike(declaration) ? [] : this.declaration(declaration, new Set())
  }
}

/** `Tag.of(value)`: a Context.Tag's identity function, typing `value` as the Tag's Shape. */
const isOfCall = (call: ts.CallExpression) =>
  call.arguments.length === 1 && ts.isPropertyAccessExpression(call.expression) && call.expression.name.text === "of"
