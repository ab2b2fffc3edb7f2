// End to end in real Chromium (Debian's `chromium`, driven by playwright-core): two pages of the web
// page, signed in as two users; a task created in one appears live in the other (tasks.watch over
// WebSocket through the browser bundle of @trivium/client).
import t from 'tap'
import { launchChromium, skipBrowser } from './chromium.js'
import { startDemo } from './helpers.js'

t.test(
  'a task created in one browser page appears in the other',
  { timeout: 240_000, skip: skipBrowser },
  async (t) => {
    const { app } = await startDemo(t)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as { port: number }
    const base = `http://127.0.0.1:${port}/`

    const browser = await launchChromium(t)
    const errors: string[] = []

    async function openSignedIn(username: string) {
      const page = await browser.newPage()
      page.on('pageerror', (err) => errors.push(`${username}: ${err.message}`))
      await page.goto(base)
      await page.fill('#username', username)
      await page.fill('#password', 'Str0ng!Passw0rd')
      await page.fill('#email', `${username}@example.com`)
      await page.click('#register-button')
      await page.waitForSelector('#tasks-view:not([hidden])', { timeout: 60_000 })
      await page.waitForSelector('#status[data-state="connected"]', { timeout: 60_000 })
      return page
    }

    const first = await openSignedIn('pagea')
    const second = await openSignedIn('pageb')
    t.equal(await first.textContent('#me'), 'pagea')

    await first.fill('#new-title', 'Appears everywhere <b>bold?</b>')
    await first.click('#create-button')
    const seen = await second.waitForSelector('#tasks li span', { timeout: 60_000 })
    t.equal(await seen.textContent(), 'Appears everywhere <b>bold?</b>', 'rendered as text, not HTML')
    t.equal(await second.locator('#tasks li b').count(), 0, 'no HTML injected')
    t.equal(await first.locator('#tasks li').count(), 1)

    // Ticking it done in the second page (not the owner) is refused; in the first it propagates.
    await first.click('#tasks li input[type=checkbox]')
    await second.waitForSelector('#tasks li.done', { timeout: 60_000 })
    t.pass('the update reached the other page')
    t.same(errors, [], 'no uncaught errors in the pages')
  },
)
