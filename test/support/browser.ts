import chromiumBinary from "@sparticuz/chromium"
import { type Browser, chromium } from "playwright-core"

/**
 * A headless Chromium from npm (@sparticuz/chromium, Linux x64/arm64), so browser tests need no
 * system package. The package unpacks its binary into the temp folder on first use.
 *
 * It runs single-process: one page at a time per browser. Close a page before opening the next,
 * or launch one browser per page.
 */
export const launchChromium = async (): Promise<Browser> => {
  // No WebGL needed: skips unpacking SwiftShader.
  chromiumBinary.setGraphicsMode = false
  return chromium.launch({
    executablePath: await chromiumBinary.executablePath(),
    headless: true,
    // Background and component-update traffic would reach public hosts; the tests allow loopback only.
    args: [...chromiumBinary.args, "--disable-background-networking", "--disable-component-update"]
  })
}
