// Real Chromium for the browser tests (Debian's `chromium`, driven by playwright-core); closed at teardown.
import { existsSync } from 'node:fs'
import { type Browser, chromium } from 'playwright-core'
import type { Test } from 'tap'

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** Every browser test's `skip` option: with TRIVIUM_SKIP_BROWSER=1 they report themselves skipped, never passed. */
export const skipBrowser =
  process.env.TRIVIUM_SKIP_BROWSER === '1' ? 'TRIVIUM_SKIP_BROWSER=1: no browser test' : false

export async function launchChromium(t: Test): Promise<Browser> {
  t.ok(
    existsSync(CHROMIUM),
    `Chromium is installed at ${CHROMIUM} (the test command installs Debian's chromium)`,
  )
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  t.teardown(() => browser.close())
  return browser
}
