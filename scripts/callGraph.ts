/**
 * The nodes of the call graph of a project's src/ for scripts/folder-walk.ts, and the syntax rules
 * callResolver.ts and callEdges.ts share. What is a node and what is an edge is written in
 * docs/architecture.md, "Counting folder crossings"; the functions below say how each rule is read
 * from the syntax.
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

export type FunctionLike = ts.ArrowFunction | ts.FunctionExpression

export const isFunctionLike = (node: ts.Node): node is FunctionLike =>
  ts.isArrowFunction(node) || ts.isFunctionExpression(node)

/** `(x)`, `x as T`, `x satisfies T`, `x!`: the expression that carries the value. */
export const unwrap = (node: ts.Expression): ts.Expression =>
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
export const ownName = (node: ts.Node, source: ts.SourceFile): string | undefined => {
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

/** The part of a node's declaration that runs: a function's own node, or a binding's value. */
export const bodyOf = (declaration: ts.Node): ts.Node | undefined =>
  ts.isVariableDeclaration(declaration) || ts.isPropertyAssignment(declaration) || ts.isPropertyDeclaration(declaration)
    ? declaration.initializer
    : declaration

/** The function a node's value is, when it is one (`const f = (x) => ...`, `function f`, a method). */
export const functionOf = (declaration: ts.Node): ts.SignatureDeclaration | undefined => {
  const body = bodyOf(declaration)
  if (body === undefined) return undefined
  if (ts.isFunctionDeclaration(body) || ts.isMethodDeclaration(body) || isFunctionLike(body)) return body
  return ts.isExpression(body) && isFunctionLike(unwrap(body)) ? (unwrap(body) as FunctionLike) : undefined
}

/** What a function answers with: its expression body, or the expression of each of its own `return`s. */
export const returnedExpressions = (fn: ts.SignatureDeclaration): ReadonlyArray<ts.Expression> => {
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
export const LAZY = new Set(["Effect", "Layer", "Stream", "Schedule", "Micro", "STM"])
