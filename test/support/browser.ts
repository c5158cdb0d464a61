import chromiumBinary from "@sparticuz/chromium"
import { type Browser, chromium } from "playwright-core"

/**
 * A headless Chromium from npm (@sparticuz/chromium, Linux x64 only), so browser tests need no
 * system package. The package unpacks its binary into the temp folder on first use.
 *
 * It runs single-process: a browser holds one page, and a second fails even once the first is
 * closed. Navigate one page, or launch one browser per page.
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
