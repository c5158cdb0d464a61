/**
 * Lists every function under src/ longer than a limit (default 50 lines), longest first, as
 * `file:line name length`, then how many there are. Functions are declarations, arrows, methods,
 * accessors, constructors and function expressions, `Effect.gen(function* ...)` bodies included;
 * a function nested in another is listed on its own as well (`--top-level` lists only those no
 * other function holds). test/codeSize.unit.test.ts holds src/ to its limits with these functions.
 *
 *   npx bun scripts/long-functions.ts [--max-lines N] [--top-level] [folder]
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import ts from "typescript"

const ROOT = resolve(import.meta.dir, "..")

export interface LongFunction {
  readonly file: string
  readonly line: number
  readonly name: string
  readonly length: number
}

type FunctionNode =
  | ts.FunctionDeclaration
  | ts.FunctionExpression
  | ts.ArrowFunction
  | ts.MethodDeclaration
  | ts.ConstructorDeclaration
  | ts.GetAccessorDeclaration
  | ts.SetAccessorDeclaration

const isFunction = (node: ts.Node): node is FunctionNode =>
  ts.isFunctionDeclaration(node) ||
  ts.isFunctionExpression(node) ||
  ts.isArrowFunction(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isConstructorDeclaration(node) ||
  ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node)

const textOf = (name: ts.PropertyName | ts.BindingName | ts.DeclarationName, source: ts.SourceFile) =>
  ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteralLike(name) || ts.isNumericLiteral(name)
    ? name.text
    : name.getText(source)

/** The name a reader would look for: the binding, property or class member that holds the function. */
const holderName = (node: ts.Node, source: ts.SourceFile): string | undefined => {
  const parent = node.parent
  if (ts.isVariableDeclaration(parent) && parent.initializer === node) return textOf(parent.name, source)
  if ((ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.initializer === node) {
    return textOf(parent.name, source)
  }
  if (ts.isBinaryExpression(parent) && parent.right === node) return parent.left.getText(source)
  if (ts.isExportAssignment(parent)) return "default"
  return undefined
}

/** `Effect.gen`, `pipe`... for a function passed as an argument; long callee chains are shortened. */
const calleeName = (call: ts.CallExpression, source: ts.SourceFile) => {
  const text = call.expression.getText(source).replace(/\s+/g, "")
  return text.length <= 40 ? text : `...${text.slice(-37)}`
}

/**
 * A function's name. Named declarations and methods use their own name (with the class in front
 * for class members); anonymous functions are named after what holds them. A function passed to a
 * call, such as `Effect.gen(function* ...)`, is named `holder > Effect.gen(function*)`, the holder
 * being the nearest named thing around the call.
 */
const functionName = (node: FunctionNode, source: ts.SourceFile): string => {
  if (ts.isConstructorDeclaration(node)) return `${className(node) ?? "<class>"}.constructor`
  if (ts.isMethodDeclaration(node) || ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node)) {
    const owner = ts.isClassLike(node.parent) ? className(node) : undefined
    const prefix = ts.isGetAccessorDeclaration(node) ? "get " : ts.isSetAccessorDeclaration(node) ? "set " : ""
    return `${prefix}${owner !== undefined ? `${owner}.` : ""}${textOf(node.name, source)}`
  }
  if ((ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node)) && node.name !== undefined)
    return node.name.text
  if (ts.isFunctionDeclaration(node)) return "default" // `export default function () {}`, the only unnamed declaration
  const own = holderName(node, source)
  if (own !== undefined) return own
  if (ts.isCallExpression(node.parent)) {
    const kind = ts.isArrowFunction(node) ? "=>" : node.asteriskToken !== undefined ? "function*" : "function"
    const label = `${calleeName(node.parent, source)}(${kind})`
    const around = enclosingName(node.parent, source)
    return around === undefined ? label : `${around} > ${label}`
  }
  const around = enclosingName(node.parent, source)
  return around === undefined ? "<anonymous>" : `${around} > <anonymous>`
}

const className = (member: ts.ClassElement): string | undefined => {
  const owner = member.parent
  return ts.isClassLike(owner) && owner.name !== undefined ? owner.name.text : undefined
}

/** The name of the nearest enclosing function, or of the binding or property an expression sits in. */
const enclosingName = (start: ts.Node, source: ts.SourceFile): string | undefined => {
  for (let node: ts.Node = start; !ts.isSourceFile(node); node = node.parent) {
    if (isFunction(node)) return functionName(node, source)
    const held = holderName(node, source)
    if (held !== undefined) return held
    if (ts.isClassLike(node) && node.name !== undefined) return node.name.text
  }
  return undefined
}

/** Lines from the line of the function's first token (after leading comments) to the line of its last. */
const lineSpan = (node: ts.Node, source: ts.SourceFile) => {
  const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line
  const last = source.getLineAndCharacterOfPosition(node.getEnd()).line
  return { line: first + 1, length: last - first + 1 }
}

/**
 * The functions of one file longer than `maxLines`. With `topLevel`, only functions no other
 * function holds: a service's `make` counts whole, the helpers inside it are not listed again.
 */
export const longFunctions = (
  fileName: string,
  text: string,
  maxLines: number,
  options: { readonly topLevel?: boolean } = {}
): ReadonlyArray<LongFunction> => {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const found: Array<LongFunction> = []
  const visit = (node: ts.Node): void => {
    // Overload signatures and abstract members have no body and so no length worth counting.
    const counted = isFunction(node) && node.body !== undefined
    if (counted) {
      const { line, length } = lineSpan(node, source)
      if (length > maxLines) found.push({ file: fileName, line, name: functionName(node, source), length })
    }
    if (!(counted && options.topLevel === true)) ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** Lines of a file as an editor numbers them: a final newline ends the last line, it opens none. */
export const lineCount = (text: string) => (text === "" ? 0 : text.replace(/\n$/, "").split("\n").length)

/** Every TypeScript source under `folder` (declaration files aside), as absolute paths in a stable order. */
export const sourceFiles = (folder: string): ReadonlyArray<string> =>
  readdirSync(folder, { recursive: true, encoding: "utf8" })
    .filter((path) => /\.tsx?$/.test(path) && !path.endsWith(".d.ts"))
    .map((path) => join(folder, path))
    .sort()

/** Longest first; equal lengths in file and line order, so the listing is stable. */
export const byLength = (a: LongFunction, b: LongFunction) =>
  b.length - a.length || a.file.localeCompare(b.file) || a.line - b.line

/** A file's path from the repository root, with forward slashes (`src/store/Database.ts`). */
export const projectPath = (file: string) => relative(ROOT, file).split("\\").join("/")

const parseArgs = (argv: ReadonlyArray<string>) => {
  let maxLines = 50
  let folder = "src"
  let topLevel = false
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === "--top-level") topLevel = true
    else if (arg === "--max-lines") maxLines = Number(argv[++i])
    else if (arg.startsWith("--max-lines=")) maxLines = Number(arg.slice("--max-lines=".length))
    else folder = arg
  }
  if (!Number.isInteger(maxLines) || maxLines < 0) {
    process.stderr.write("usage: bun scripts/long-functions.ts [--max-lines N] [--top-level] [folder]\n")
    process.exit(2)
  }
  return { maxLines, folder, topLevel }
}

if (import.meta.main) {
  const { maxLines, folder, topLevel } = parseArgs(process.argv.slice(2))
  const found = sourceFiles(resolve(ROOT, folder))
    .flatMap((file) => longFunctions(projectPath(file), readFileSync(file, "utf8"), maxLines, { topLevel }))
    .sort(byLength)
  for (const f of found) process.stdout.write(`${f.file}:${f.line} ${f.name} ${f.length}\n`)
  process.stdout.write(
    `${found.length} function${found.length === 1 ? "" : "s"} longer than ${maxLines} lines in ${folder}/\n`
  )
}
