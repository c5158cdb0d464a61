/**
 * The call graph of a project's src/, built lazily with the TypeScript type checker, for
 * scripts/folder-walk.ts. What is a node and what is an edge is written in docs/architecture.md,
 * "Counting folder crossings"; the functions below say how each rule is read from the syntax.
 */
import { dirname, join, relative, resolve } from "node:path"
import ts from "typescript"

/** One function-like declaration of src/, named as a reader finds it (`make.settle`, `Settlement.Live`). */
export interface GraphNode {
  readonly id: number
  /** The file's path from the project root, forward slashes. */
  readonly file: string
  readonly name: string
  readonly folder: string
  readonly declaration: ts.Node
}

export type EdgeKind = "call" | "callback"

export interface GraphEdge {
  readonly from: GraphNode
  readonly to: GraphNode
  readonly kind: EdgeKind
}

export interface Project {
  readonly root: string
  readonly checker: ts.TypeChecker
  readonly nodes: ReadonlyArray<GraphNode>
  /** The node a declaration (or a labelled handler's function) is, if it is one. */
  readonly nodeAt: ReadonlyMap<ts.Node, GraphNode>
  readonly sources: ReadonlyArray<ts.SourceFile>
}

type FunctionLike = ts.ArrowFunction | ts.FunctionExpression

const isFunctionLike = (node: ts.Node): node is FunctionLike =>
  ts.isArrowFunction(node) || ts.isFunctionExpression(node)

/** `(x)`, `x as T`, `x satisfies T`, `x!`: the expression that carries the value. */
const unwrap = (node: ts.Expression): ts.Expression =>
  ts.isParenthesizedExpression(node) ||
  ts.isAsExpression(node) ||
  ts.isSatisfiesExpression(node) ||
  ts.isNonNullExpression(node) ||
  ts.isTypeAssertionExpression(node)
    ? unwrap(node.expression)
    : node

const containsFunction = (node: ts.Node): boolean =>
  isFunctionLike(node) || (!ts.isClassLike(node) && (ts.forEachChild(node, containsFunction) ?? false))

/**
 * A binding holds a function when its value is one, or is built from one (`Effect.gen(function* ...)`,
 * `Effect.fn("name")(function* ...)`, `Layer.effect(Tag, Effect.gen(...))`). An object or array
 * literal is data: its members are nodes of their own.
 */
const holdsFunction = (initializer: ts.Expression | undefined): boolean => {
  if (initializer === undefined) return false
  const value = unwrap(initializer)
  if (ts.isObjectLiteralExpression(value) || ts.isArrayLiteralExpression(value)) return false
  return containsFunction(value)
}

/** `handlers.handle("settle", (request) => ...)`: an HttpApi handler, named after its endpoint. */
const handlerLabel = (node: ts.Node): string | undefined => {
  const call = node.parent
  if (!isFunctionLike(node) || call === undefined || !ts.isCallExpression(call)) return undefined
  const [label, ...rest] = call.arguments
  if (!ts.isPropertyAccessExpression(call.expression) || call.expression.name.text !== "handle") return undefined
  return label !== undefined && ts.isStringLiteralLike(label) && rest.includes(node as ts.Expression)
    ? `handle:${label.text}`
    : undefined
}

const nameText = (name: ts.PropertyName | ts.BindingName, source: ts.SourceFile) =>
  ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteralLike(name) || ts.isNumericLiteral(name)
    ? name.text
    : name.getText(source)

/** The node's own name when `node` is a node's declaration, else undefined. */
const ownName = (node: ts.Node, source: ts.SourceFile): string | undefined => {
  if (ts.isFunctionDeclaration(node)) return node.body === undefined ? undefined : (node.name?.text ?? "default")
  if (ts.isMethodDeclaration(node) || ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node)) {
    return node.body === undefined ? undefined : nameText(node.name, source)
  }
  if (ts.isConstructorDeclaration(node)) return node.body === undefined ? undefined : "constructor"
  if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && holdsFunction(node.initializer)) {
    return node.name.text
  }
  if ((ts.isPropertyAssignment(node) || ts.isPropertyDeclaration(node)) && holdsFunction(node.initializer)) {
    return nameText(node.name, source)
  }
  return handlerLabel(node)
}

/** The folder of a file: the first segment under src/, or the file's own name for a file directly in src/. */
export const folderOfFile = (file: string): string => {
  const parts = file.split("/")
  return parts.length > 2 ? parts[1]! : (parts[1] ?? file)
}

const collectNodes = (root: string, sources: ReadonlyArray<ts.SourceFile>) => {
  const nodes: Array<GraphNode> = []
  const nodeAt = new Map<ts.Node, GraphNode>()
  for (const source of sources) {
    const file = relative(root, source.fileName).split("\\").join("/")
    const named: Array<{ declaration: ts.Node; name: string }> = []
    const visit = (node: ts.Node, scope: ReadonlyArray<string>): void => {
      const own = ownName(node, source)
      // Classes and object-literal bindings name what they hold, without being nodes themselves.
      const holder =
        ts.isClassLike(node) || (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name))
          ? (node.name as ts.Identifier | undefined)?.text
          : undefined
      if (own !== undefined) named.push({ declaration: node, name: [...scope, own].join(".") })
      const label = own ?? holder
      const inner = label !== undefined ? [...scope, label] : scope
      ts.forEachChild(node, (child) => visit(child, inner))
    }
    visit(source, [])
    const seen = new Map<string, number>()
    for (const { name } of named) seen.set(name, (seen.get(name) ?? 0) + 1)
    for (const { declaration, name } of named) {
      const line = source.getLineAndCharacterOfPosition(declaration.getStart(source)).line + 1
      const unique = seen.get(name) === 1 ? name : `${name}@${line}`
      const node: GraphNode = { id: nodes.length, file, name: unique, folder: folderOfFile(file), declaration }
      nodes.push(node)
      nodeAt.set(declaration, node)
    }
  }
  return { nodes, nodeAt }
}

/** The program of `tsconfig.json` in `root`, its files under src/ taken as the graph's nodes. */
export const loadProject = (root: string): Project => {
  const absolute = resolve(root)
  const configPath = join(absolute, "tsconfig.json")
  const read = ts.readConfigFile(configPath, ts.sys.readFile)
  if (read.error !== undefined) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, "\n"))
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(configPath))
  const srcDir = `${join(absolute, "src")}/`
  // Only src/ is walked, so the program needs only its files (and what they import), not the tests.
  const rootNames = parsed.fileNames.filter((f) => resolve(f).startsWith(srcDir))
  const program = ts.createProgram({ rootNames, options: { ...parsed.options, noEmit: true } })
  const sources = program.getSourceFiles().filter((s) => resolve(s.fileName).startsWith(srcDir) && !s.isDeclarationFile)
  return { root: absolute, checker: program.getTypeChecker(), sources, ...collectNodes(absolute, sources) }
}

/** The node `node` belongs to: itself when it is one, else the nearest node around it. */
export const enclosingNode = (project: Project, start: ts.Node): GraphNode | undefined => {
  for (let node: ts.Node | undefined = start; node !== undefined; node = node.parent) {
    const found = project.nodeAt.get(node)
    if (found !== undefined) return found
  }
  return undefined
}

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
          if (!vague && this.checker.isTypeAssignableTo(type, shapeType)) found.push(answer)
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

/** The part of a node's declaration that runs: a function's own node, or a binding's value. */
const bodyOf = (declaration: ts.Node): ts.Node | undefined =>
  ts.isVariableDeclaration(declaration) || ts.isPropertyAssignment(declaration) || ts.isPropertyDeclaration(declaration)
    ? declaration.initializer
    : declaration

/** The function a node's value is, when it is one (`const f = (x) => ...`, `function f`, a method). */
const functionOf = (declaration: ts.Node): ts.SignatureDeclaration | undefined => {
  const body = bodyOf(declaration)
  if (body === undefined) return undefined
  if (ts.isFunctionDeclaration(body) || ts.isMethodDeclaration(body) || isFunctionLike(body)) return body
  return ts.isExpression(body) && isFunctionLike(unwrap(body)) ? (unwrap(body) as FunctionLike) : undefined
}

/** What a function answers with: its expression body, or the expression of each of its own `return`s. */
const returnedExpressions = (fn: ts.SignatureDeclaration): ReadonlyArray<ts.Expression> => {
  const body = (fn as ts.FunctionLikeDeclaration).body
  if (body === undefined) return []
  if (!ts.isBlock(body)) return [body]
  const found: Array<ts.Expression> = []
  const visit = (node: ts.Node): void => {
    if (ts.isReturnStatement(node) && node.expression !== undefined) found.push(node.expression)
    if (!ts.isFunctionLike(node)) ts.forEachChild(node, visit)
  }
  ts.forEachChild(body, visit)
  return found
}

/** Effect's descriptions of work: a binding holding one runs nothing until it is run. */
const LAZY = new Set(["Effect", "Layer", "Stream", "Schedule", "Micro", "STM"])

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
