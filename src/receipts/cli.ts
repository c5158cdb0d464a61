import { readFile } from "node:fs/promises"
import { Either } from "effect"
import { type CommandOutput, processOutput } from "../lifecycle/commandOutput.js"
import { parsePublicKey } from "./ed25519.js"
import { verifyReceipt } from "./receipt.js"

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
 * `sextant receipt verify <file> [--public-key KEY]`. Checks offline, with no service and no
 * secret: against the receipt's own serviceSigner, or against KEY (base64 or G...) when the holder
 * trusts a specific key. Prints one JSON line and answers the exit code: 0 valid, 1 invalid, 2 usage error or unreadable file.
 */
export const receiptVerifyCommand = async (
  file: string,
  keyText: string | undefined,
  output: CommandOutput = processOutput
): Promise<number> => {
  const publicKey =
    keyText === undefined
      ? Either.right(undefined)
      : Either.mapLeft(parsePublicKey(keyText), (reason) => `--public-key: ${reason}`)
  if (Either.isLeft(publicKey)) {
    output.out(JSON.stringify({ error: "USAGE", message: publicKey.left }))
    return 2
  }
  const receipt = await readReceipt(file)
  if (Either.isLeft(receipt)) {
    output.out(JSON.stringify({ error: "UNREADABLE", message: receipt.left }))
    return 2
  }
  const check = verifyReceipt(receipt.right, publicKey.right === undefined ? {} : { publicKey: publicKey.right })
  const receiptId =
    typeof receipt.right === "object" && receipt.right !== null && "receiptId" in receipt.right
      ? receipt.right.receiptId
      : null
  output.out(JSON.stringify({ file, receiptId: typeof receiptId === "string" ? receiptId : null, ...check }))
  return check.valid ? 0 : 1
}
