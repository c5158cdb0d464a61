/**
 * The import rules of docs/architecture.md, checked on every file under src/. A failure names the
 * importing file, the imported path and the rule; the rule function itself is tested on synthetic
 * graphs below, so a clean tree is known to pass.
 */
import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join, posix, relative, resolve } from "node:path"
import ts from "typescript"
import { describeTangles, type Edge, folderGraph, folderOf } from "./support/folderGraph.js"

const ROOT = resolve(import.meta.dir, "..")

interface Violation extends Edge {
  readonly rule: 1 | 2 | 3 | 4 | 5
}

/** Every module specifier a file names: static imports, `export ... from`, `import()`, `import("x").T`, `require`. */
const importSpecifiers = (fileName: string, text: string): ReadonlyArray<string> => {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const found: Array<string> = []
  const literal = (node: ts.Node | undefined) => {
    if (node !== undefined && ts.isStringLiteralLike(node)) found.push(node.text)
  }
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) literal(node.moduleSpecifier)
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      literal(node.moduleReference.expression)
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword)
      literal(node.arguments[0])
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) literal(node.argument.literal)
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

const toPosix = (path: string) => path.split("\\").join("/")

/**
 * A relative specifier as the project path it names, the way the bundler resolution of
 * tsconfig.json finds it (`./x.js` is `./x.ts`; a folder is its `index.ts`). Package and `node:`
 * specifiers are not project modules: null.
 */
const resolveSpecifier = (from: string, specifier: string, exists: (projectPath: string) => boolean): string | null => {
  if (!specifier.startsWith("./") && !specifier.startsWith("../")) return null
  const target = posix.normalize(posix.join(posix.dirname(from), specifier))
  const candidates = [target.replace(/\.(m|c)?js$/, ".$1ts"), target, `${target}.ts`, `${target}/index.ts`]
  return candidates.find(exists) ?? target
}

const under = (path: string, folder: string) => path.startsWith(`${folder}/`)

/** Folders whose code the store and the domain must never reach: they sit above them. */
const ABOVE_STORE = ["src/verification", "src/settlement", "src/receipts", "src/discovery"]

/** The five rules of docs/architecture.md, "Import rules", on a list of project imports. */
const violations = (edges: ReadonlyArray<Edge>): ReadonlyArray<Violation> =>
  edges.flatMap(({ from, to }): Array<Violation> => {
    const broken: Array<Violation["rule"]> = []
    // 1. The domain imports nothing of the project outside itself.
    if (under(from, "src/domain") && !under(to, "src/domain")) broken.push(1)
    // 2. The store imports only the domain, the config and itself.
    if (under(from, "src/store") && !(under(to, "src/domain") || to === "src/config.ts" || under(to, "src/store"))) {
      broken.push(2)
    }
    // 3. Only the HTTP layer itself, the entry points (src/main.ts, the command line in src/cli/, src/app.ts) and the MCP
    // server (which calls the HTTP handlers) import src/http/;
    // the buyer's client derives its typed client from the contract (src/contract/), never from the server.
    if (
      under(to, "src/http") &&
      !(
        under(from, "src/http") ||
        from === "src/main.ts" ||
        under(from, "src/cli") ||
        from === "src/app.ts" ||
        under(from, "src/mcp")
      )
    ) {
      broken.push(3)
    }
    // 4. Neither the store nor the domain reaches up into the capabilities built on them.
    if ((under(from, "src/store") || under(from, "src/domain")) && ABOVE_STORE.some((folder) => under(to, folder))) {
      broken.push(4)
    }
    // 5. The API contract is declarations only: it imports the domain and itself, so the server, the MCP server and
    // the client can all import it without pulling in an implementation.
    if (under(from, "src/contract") && !(under(to, "src/domain") || under(to, "src/contract"))) broken.push(5)
    return broken.map((rule) => ({ from, to, rule }))
  })

const sourceFiles = (folder: string): ReadonlyArray<string> =>
  readdirSync(folder, { recursive: true, encoding: "utf8" })
    .filter((path) => path.endsWith(".ts"))
    .map((path) => join(folder, path))
    .sort()

const projectFileExists = (projectPath: string) => {
  const absolute = join(ROOT, projectPath)
  return existsSync(absolute) && statSync(absolute).isFile()
}

/** Every project import of every `src/**\/*.ts` file. */
const projectEdges = (): ReadonlyArray<Edge> =>
  sourceFiles(join(ROOT, "src")).flatMap((file) => {
    const from = toPosix(relative(ROOT, file))
    return importSpecifiers(file, readFileSync(file, "utf8")).flatMap((specifier) => {
      const to = resolveSpecifier(from, specifier, projectFileExists)
      return to === null ? [] : [{ from, to }]
    })
  })

/** The floors drawn in docs/architecture.md ("### Floors"): each folder with the number of its floor, 1 at the bottom. */
const drawnFloors = (markdown: string): ReadonlyMap<string, number> => {
  const section = markdown.split("### Floors")[1]?.split("\n## ")[0] ?? ""
  const floors = new Map<string, number>()
  for (const line of section.split("\n")) {
    const floor = /^(\d+)\. ((?:`[a-z0-9]+`(?:, )?)+)/.exec(line)
    if (floor !== null)
      for (const [, folder] of floor[2]!.matchAll(/`([a-z0-9]+)`/g)) floors.set(folder!, Number(floor[1]))
  }
  return floors
}

const describeViolation = ({ from, to, rule }: Violation) => `rule ${rule}: ${from} imports ${to}`

describe("import rules on src/", () => {
  const edges = projectEdges()
  const found = violations(edges)
  const ofRule = (rule: Violation["rule"]) => found.filter((v) => v.rule === rule).map(describeViolation)

  test("the walk sees the tree: every file under src/ and the imports between them", () => {
    expect(edges.length).toBeGreaterThan(100)
    expect(edges).toContainEqual({ from: "src/app.ts", to: "src/config.ts" })
    // Every resolved import names a file that exists, so a rule never passes on a mistyped path.
    expect(edges.filter((e) => !projectFileExists(e.to)).map((e) => `${e.from} imports ${e.to}`)).toEqual([])
  })

  test("1. files in src/domain/ import no project module outside src/domain/", () => {
    expect(ofRule(1)).toEqual([])
  })

  test("2. files in src/store/ import only src/domain/, src/config.ts and src/store/", () => {
    expect(ofRule(2)).toEqual([])
  })

  test("3. only src/http/, src/main.ts, src/cli/, src/app.ts and src/mcp/ import src/http/", () => {
    expect(ofRule(3)).toEqual([])
  })

  test("4. src/store/ and src/domain/ import nothing from verification, settlement, receipts or discovery", () => {
    expect(ofRule(4)).toEqual([])
  })

  test("5. src/contract/ imports only src/domain/ and itself", () => {
    expect(ofRule(5)).toEqual([])
  })

  test("6. the capability folders form a DAG: no folder imports one that imports it back, directly or round a loop", () => {
    expect(describeTangles(edges)).toEqual([])
  })

  test("the floors drawn in docs/architecture.md name every folder, and every import runs down them", () => {
    const floors = drawnFloors(readFileSync(join(ROOT, "docs/architecture.md"), "utf8"))
    const folders = [
      ...new Set(sourceFiles(join(ROOT, "src")).flatMap((file) => folderOf(toPosix(relative(ROOT, file))) ?? []))
    ].sort()
    expect(folders.filter((folder) => !floors.has(folder))).toEqual([])
    expect([...floors.keys()].filter((folder) => !folders.includes(folder))).toEqual([])
    const upward = edges.filter(({ from, to }) => {
      const [below, above] = [folderOf(from), folderOf(to)]
      return below !== null && above !== null && below !== above && floors.get(above)! >= floors.get(below)!
    })
    expect(
      upward.map(
        ({ from, to }) =>
          `${from} (floor ${floors.get(folderOf(from)!)}) imports ${to} (floor ${floors.get(folderOf(to)!)})`
      )
    ).toEqual([])
  })

  test("the buyer's client imports nothing from verification/: the outbound layer and the decoders sit below both", () => {
    expect(
      edges
        .filter((e) => under(e.from, "src/client") && under(e.to, "src/verification"))
        .map((e) => `${e.from} imports ${e.to}`)
    ).toEqual([])
  })

  test("the contract is shared: the server, the MCP server and the client all import it", () => {
    const importers = (folder: string) => edges.filter((e) => under(e.from, folder) && under(e.to, "src/contract"))
    expect(importers("src/http").length).toBeGreaterThan(0)
    expect(importers("src/mcp").length).toBeGreaterThan(0)
    expect(importers("src/client").length).toBeGreaterThan(0)
  })
})

describe("the rule function", () => {
  const rulesOf = (from: string, to: string) => violations([{ from, to }]).map((v) => v.rule)

  test("a layered graph that keeps every rule passes", () => {
    const clean: ReadonlyArray<Edge> = [
      { from: "src/domain/routes.ts", to: "src/domain/policy.ts" },
      { from: "src/store/ResourceReadsRepo.ts", to: "src/domain/resources.ts" },
      { from: "src/store/Database.ts", to: "src/store/migrations/index.ts" },
      { from: "src/store/ResourceReadsRepo.ts", to: "src/config.ts" },
      { from: "src/verification/Prober.ts", to: "src/store/ResourceReadsRepo.ts" },
      { from: "src/settlement/Settlement.ts", to: "src/verification/EvidenceReader.ts" },
      { from: "src/http/handlers/x402.ts", to: "src/contract/index.ts" },
      { from: "src/client/SextantClient.ts", to: "src/contract/index.ts" },
      { from: "src/contract/x402.ts", to: "src/domain/x402.ts" },
      { from: "src/main.ts", to: "src/http/server.ts" },
      { from: "src/app.ts", to: "src/http/server.ts" },
      { from: "src/mcp/tools.ts", to: "src/contract/resources.ts" },
      { from: "src/discovery/Discovery.ts", to: "src/domain/resources.ts" }
    ]
    expect(violations(clean)).toEqual([])
  })

  test("rule 1: the domain importing the config, the store or a capability", () => {
    expect(rulesOf("src/domain/errors.ts", "src/config.ts")).toEqual([1])
    expect(rulesOf("src/domain/metrics.ts", "src/store/sortableId.ts")).toEqual([1])
    expect(rulesOf("src/domain/evidence.ts", "src/verification/metrics.ts")).toEqual([1, 4])
    expect(rulesOf("src/domain/x402.ts", "src/contract/x402.ts")).toEqual([1])
  })

  test("rule 2: the store importing anything but the domain, the config and itself", () => {
    expect(rulesOf("src/store/MetricsRepo.ts", "src/verification/metrics.ts")).toEqual([2, 4])
    expect(rulesOf("src/store/SettlementJournal.ts", "src/settlement/rules.ts")).toEqual([2, 4])
    expect(rulesOf("src/store/ResourceReadsRepo.ts", "src/policy/evaluate.ts")).toEqual([2])
    expect(rulesOf("src/store/ResourceReadsRepo.ts", "src/x402/capabilities.ts")).toEqual([2])
    expect(rulesOf("src/store/ResourceReadsRepo.ts", "src/app.ts")).toEqual([2])
    // A folder that merely starts like an allowed one is not it.
    expect(rulesOf("src/store/ResourceReadsRepo.ts", "src/domainish/x.ts")).toEqual([2])
  })

  test("rule 3: src/http/ imported from outside the HTTP layer, the entry points and MCP", () => {
    expect(rulesOf("src/discovery/Discovery.ts", "src/http/handlers/resources.ts")).toEqual([3])
    expect(rulesOf("src/client/SextantClient.ts", "src/http/server.ts")).toEqual([3])
    expect(rulesOf("src/verification/Prober.ts", "src/http/errors.ts")).toEqual([3])
    expect(rulesOf("src/vertical/VerticalApp.ts", "src/http/body.ts")).toEqual([3])
    expect(rulesOf("src/store/ResourceReadsRepo.ts", "src/http/errors.ts")).toEqual([2, 3])
    expect(rulesOf("src/mcp/server.ts", "src/http/server.ts")).toEqual([])
    expect(rulesOf("src/cli/serve.ts", "src/http/server.ts")).toEqual([])
    // A folder that merely starts like an allowed one is not it.
    expect(rulesOf("src/client/cli.ts", "src/http/server.ts")).toEqual([3])
  })

  test("rule 5: the contract importing an implementation", () => {
    expect(rulesOf("src/contract/x402.ts", "src/http/errors.ts")).toEqual([3, 5])
    expect(rulesOf("src/contract/x402.ts", "src/settlement/Settlement.ts")).toEqual([5])
    expect(rulesOf("src/contract/x402.ts", "src/config.ts")).toEqual([5])
    expect(rulesOf("src/contract/x402.ts", "src/domain/x402.ts")).toEqual([])
  })

  test("rule 4: the store or the domain reaching into verification, settlement, receipts or discovery", () => {
    for (const folder of ["verification", "settlement", "receipts", "discovery"]) {
      expect(rulesOf("src/store/ObservationsRepo.ts", `src/${folder}/x.ts`)).toEqual([2, 4])
      expect(rulesOf("src/domain/receipts.ts", `src/${folder}/x.ts`)).toEqual([1, 4])
    }
    expect(rulesOf("src/settlement/Settlement.ts", "src/receipts/canonicalJson.ts")).toEqual([])
  })

  test("a violation names the importing file and the imported path", () => {
    expect(
      violations([{ from: "src/store/MetricsRepo.ts", to: "src/verification/metrics.ts" }]).map(describeViolation)
    ).toEqual([
      "rule 2: src/store/MetricsRepo.ts imports src/verification/metrics.ts",
      "rule 4: src/store/MetricsRepo.ts imports src/verification/metrics.ts"
    ])
  })
})

describe("the folder graph", () => {
  const edge = (from: string, to: string): Edge => ({ from, to })

  test("a layered graph has no tangle; files directly under src/ and imports inside a folder make no arrow", () => {
    const layered = [
      edge("src/client/Buyer.ts", "src/payments/payFor.ts"),
      edge("src/payments/payFor.ts", "src/outbound/Connector.ts"),
      edge("src/verification/Prober.ts", "src/outbound/Connector.ts"),
      edge("src/http/handlers/x402.ts", "src/http/errors.ts"),
      edge("src/outbound/endpoints.ts", "src/config.ts"),
      edge("src/config.ts", "src/domain/x402.ts"),
      edge("src/domain/x402.ts", "src/config.ts")
    ]
    expect(describeTangles(layered)).toEqual([])
    expect([...folderGraph(layered).keys()].sort()).toEqual(["client", "payments", "verification"])
  })

  test("two folders importing each other are named with the file import behind each arrow", () => {
    expect(
      describeTangles([
        edge("src/payments/payFor.ts", "src/verification/challenge.ts"),
        edge("src/verification/EconomicProber.ts", "src/payments/payFor.ts"),
        edge("src/verification/EconomicProber.ts", "src/store/Database.ts")
      ])
    ).toEqual([
      "{payments, verification}: payments -> verification -> payments " +
        "(src/payments/payFor.ts imports src/verification/challenge.ts; src/verification/EconomicProber.ts imports src/payments/payFor.ts)"
    ])
  })

  test("a loop round three folders is found, and separate tangles are listed apart", () => {
    const found = describeTangles([
      edge("src/outbound/endpoints.ts", "src/vertical/VerticalServer.ts"),
      edge("src/vertical/homeDomain.ts", "src/verification/outboundGuard.ts"),
      edge("src/verification/Prober.ts", "src/outbound/egress.ts"),
      edge("src/http/server.ts", "src/mcp/httpTransport.ts"),
      edge("src/mcp/httpTransport.ts", "src/http/authLive.ts"),
      edge("src/cli/serve.ts", "src/http/server.ts")
    ])
    expect(found).toEqual([
      "{http, mcp}: http -> mcp -> http (src/http/server.ts imports src/mcp/httpTransport.ts; src/mcp/httpTransport.ts imports src/http/authLive.ts)",
      "{outbound, verification, vertical}: outbound -> vertical -> verification -> outbound " +
        "(src/outbound/endpoints.ts imports src/vertical/VerticalServer.ts; src/vertical/homeDomain.ts imports " +
        "src/verification/outboundGuard.ts; src/verification/Prober.ts imports src/outbound/egress.ts)"
    ])
  })
})

describe("reading and resolving imports", () => {
  test("static, type-only, re-export, dynamic, import-type and require forms are all found", () => {
    const text = [
      `import { a } from "./a.js"`,
      `import type { B } from "../b.js"`,
      `import "./side-effect.js"`,
      `export { c } from "./c.js"`,
      `export * from "./d.js"`,
      `export * as e from "./e.js"`,
      `const f = await import("./f.js")`,
      `type G = import("./g.js").G`,
      `import h = require("./h.js")`,
      `import { Effect } from "effect"`,
      `const notAnImport = "./nothing.js"`
    ].join("\n")
    expect(importSpecifiers("x.ts", text)).toEqual([
      "./a.js",
      "../b.js",
      "./side-effect.js",
      "./c.js",
      "./d.js",
      "./e.js",
      "./f.js",
      "./g.js",
      "./h.js",
      "effect"
    ])
  })

  test("relative specifiers resolve to project paths; packages and node: builtins are not project modules", () => {
    const files = new Set([
      "src/store/Database.ts",
      "src/store/migrations/index.ts",
      "src/domain/index.ts",
      "src/store/demo-catalog.json"
    ])
    const exists = (path: string) => files.has(path)
    expect(resolveSpecifier("src/store/ResourceReadsRepo.ts", "./Database.js", exists)).toBe("src/store/Database.ts")
    expect(resolveSpecifier("src/store/Database.ts", "./migrations/index.js", exists)).toBe(
      "src/store/migrations/index.ts"
    )
    expect(resolveSpecifier("src/http/handlers/x402.ts", "../../domain", exists)).toBe("src/domain/index.ts")
    expect(resolveSpecifier("src/config.ts", "./store/demo-catalog.json", exists)).toBe("src/store/demo-catalog.json")
    expect(resolveSpecifier("src/config.ts", "effect", exists)).toBeNull()
    expect(resolveSpecifier("src/config.ts", "node:fs", exists)).toBeNull()
    expect(resolveSpecifier("src/config.ts", "@effect/platform", exists)).toBeNull()
  })
})
