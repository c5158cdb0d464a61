import { Either } from "effect"
import { readFile } from "node:fs/promises"
import { parsePublicKey } from "./ed25519.js"
import { verifyReceipt } from "./receipt.js"

export const RECEIPT_VERIFY_USAGE = "usage: sextant receipt verify <file> [--public-key <base64|G...>]"

export interface CommandOutput {
  readonly out: (line: string) => void
  readonly err: (line: string) => void
}

const processOutput: CommandOutput = {
  out: (line) => void process.stdout.write(`${line}\n`),
  err: (line) => void process.stderr.write(`${line}\n`)
}

interface VerifyArgs {
  readonly file: string
  readonly publicKey: Uint8Array | undefined
}

const parseArgs = (argv: ReadonlyArray<string>): Either.Either<VerifyArgs | "help", string> => {
  const files: Array<string> = []
  let keyText: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === "-h" || arg === "--help") return Either.right("help")
    if (arg === "--public-key" || arg.startsWith("--public-key=")) {
      const value = arg === "--public-key" ? argv[++i] : arg.slice("--public-key=".length)
      if (value === undefined || value === "") return Either.left("--public-key needs a value")
      keyText = value
    } else if (arg.startsWith("-")) {
      return Either.left(`unknown option ${arg}`)
    } else {
      files.push(arg)
    }
  }
  const [file, ...extra] = files
  if (file === undefined) return Either.left("missing the receipt file")
  if (extra.length > 0) return Either.left(`one receipt file at a time, got ${files.length}`)
  if (keyText === undefined) return Either.right({ file, publicKey: undefined })
  return Either.match(parsePublicKey(keyText), {
    onLeft: (reason) => Either.left(`--public-key: ${reason}`),
    onRight: (publicKey) => Either.right({ file, publicKey })
  })
}

const readReceipt = async (file: string): Promise<Either.Either<unknown, string>> => {
  let text: string
  try {
    text = await readFile(file, "utf8")
  } catch (e) {
    return Either.left(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? "error"}`)
  }
  try {
    return Either.right(JSON.parse(text))
  } catch {
    return Either.left(`${file} is not JSON`)
  }
}

/**
 * `sextant receipt verify <file> [--public-key KEY]`, given the arguments after `receipt verify`.
 * Checks offline, with no service and no secret: against the receipt's own serviceSigner, or
 * against KEY (base64 or G...) when the holder trusts a specific key. Prints one JSON line and
 * answers the exit code: 0 valid, 1 invalid, 2 usage error or unreadable file.
 */
export const receiptVerifyCommand = async (
  argv: ReadonlyArray<string>,
  output: CommandOutput = processOutput
): Promise<number> => {
  const args = parseArgs(argv)
  if (Either.isLeft(args)) {
    output.out(JSON.stringify({ error: "USAGE", message: args.left }))
    output.err(RECEIPT_VERIFY_USAGE)
    return 2
  }
  if (args.right === "help") {
    output.out(RECEIPT_VERIFY_USAGE)
    return 0
  }
  const { file, publicKey } = args.right
  const receipt = await readReceipt(file)
  if (Either.isLeft(receipt)) {
    output.out(JSON.stringify({ error: "UNREADABLE", message: receipt.left }))
    return 2
  }
  const check = verifyReceipt(receipt.right, publicKey === undefined ? {} : { publicKey })
  const receiptId =
    typeof receipt.right === "object" && receipt.right !== null && "receiptId" in receipt.right
      ? receipt.right.receiptId
      : null
  output.out(JSON.stringify({ file, receiptId: typeof receiptId === "string" ? receiptId : null, ...check }))
  return check.valid ? 0 : 1
}
