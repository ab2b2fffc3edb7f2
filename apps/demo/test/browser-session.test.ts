// The web page's session in real Chromium (issue 44 item 12): when the access token expires the server
// closes the WebSocket, and the page renews the token with the refresh token, reconnects and opens its sync
// stream again, so Add, ticking a box and Import keep working; a reload stays signed in; when the refresh
// token is refused the page says the session ended; Sign out clears the form; import errors name the line
// as the user sees it (blank lines counted); a long title without spaces stays on a phone's screen.
import t from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'
import { launchChromium, skipBrowser } from './chromium.js'
import { startDemo } from './helpers.js'

// Renewed 2 s before it expires (a tenth of its life): the page then has ~18 s between two reconnects.
const TTL_SECONDS = 20

t.test(
  'expiry, renewal, reload, session end, sign-out, import lines, long titles',
  { timeout: 300_000, skip: skipBrowser },
  async (t) => {
    const { app, sql } = await startDemo(t, { accessTokenTtlSeconds: TTL_SECONDS })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as { port: number }
    const browser = await launchChromium(t)
    const errors: string[] = []
    const context = await browser.newContext({ viewport: { width: 360, height: 740 } })
    const page = await context.newPage()
    page.on('pageerror', (err) => errors.push(err.message))
    let sockets = 0
    page.on('websocket', () => sockets++)
    const wait = { timeout: waitBound(TTL_SECONDS * 1000 + 10_000) }
    // What is stored, read from the database (an admin token would expire with the short TTL too).
    const stored = async (title: string) => {
      const { rows } = await sql.query<{ done: boolean }>('SELECT done FROM demo_tasks WHERE title = $1', [
        title,
      ])
      return rows[0]
    }
    const until = async (what: string, check: () => Promise<boolean>) => {
      const end = Date.now() + wait.timeout
      while (!(await check()) && Date.now() < end) await new Promise((r) => setTimeout(r, 50))
      t.ok(await check(), what)
    }

    await page.goto(`http://127.0.0.1:${port}/`)
    await page.fill('#username', 'sessions')
    await page.fill('#password', 'Str0ng!Passw0rd')
    await page.fill('#email', 'sessions@example.com')
    await page.click('#register-button')
    await page.waitForSelector('#status[data-state="connected"]', wait)
    const first = sockets

    // The token expires (the server closes the socket): the page reconnects with a renewed token.
    t.ok(first > 0, 'the page opened its WebSocket')
    await until('a new WebSocket after the access token expired', async () => sockets > first)
    await page.waitForSelector('#status[data-state="connected"]', wait)
    await page.fill('#new-title', 'After expiry')
    await page.click('#create-button')
    await page.waitForSelector('#tasks li[data-id]', wait)
    t.ok(await stored('After expiry'), 'Add works after the token expired')
    await page.click('#tasks li input[type=checkbox]')
    await until(
      'the tick is saved after the token expired',
      async () => (await stored('After expiry'))?.done === true,
    )

    // Import: the refusal names line 4 of the box, counting the blank lines.
    await page.click('#import summary')
    await page.fill('#import-text', `Imported one\n\n\n${'x'.repeat(201)}\nImported two`)
    await page.click('#import-button')
    await page.waitForFunction(
      () => document.getElementById('import-result')?.textContent !== '',
      undefined,
      wait,
    )
    t.match(await page.textContent('#import-result'), /^Imported 2 tasks; 1 refused \(line 4: /)
    t.equal(await page.isDisabled('#import-button'), false, 'Import can be used again')

    // A title of 200 characters without a space: owner stays on screen, no sideways scroll on a phone.
    await page.fill('#new-title', 'W'.repeat(200))
    await page.click('#create-button')
    await page.waitForFunction(() => document.querySelectorAll('#tasks li').length === 4, undefined, wait)
    const layout = await page.evaluate(() => {
      const owners = Array.from(document.querySelectorAll('#tasks li .owner')).map(
        (el) => el.getBoundingClientRect().right,
      )
      return { scroll: document.documentElement.scrollWidth, width: window.innerWidth, owners }
    })
    t.ok(layout.scroll <= layout.width, `no sideways scroll (${layout.scroll} <= ${layout.width})`)
    t.ok(
      layout.owners.every((right) => right <= layout.width),
      'every owner is on screen',
    )

    // A reload stays signed in.
    await page.reload()
    await page.waitForSelector('#status[data-state="connected"]', wait)
    t.equal(await page.textContent('#me'), 'sessions')
    await page.waitForFunction(() => document.querySelectorAll('#tasks li').length === 4, undefined, wait)

    // Someone else uses the stored refresh token (rotation: the page's copy is now refused): the next renewal
    // fails and the page says the session ended.
    const session = JSON.parse(
      (await page.evaluate(() => sessionStorage.getItem('trivium-tasks-session'))) ?? '{}',
    )
    const stolen = await app.inject({
      method: 'POST',
      url: '/auth/refresh',
      payload: { refreshToken: session.refreshToken },
    })
    t.equal(stolen.statusCode, 200)
    await page.waitForSelector('#status[data-state="signed-out"]', wait)
    t.equal(await page.textContent('#login-error'), 'Your session has ended: sign in again.')
    t.equal(await page.evaluate(() => sessionStorage.getItem('trivium-tasks-session')), null)

    // Sign in again, then Sign out: the form is empty and a reload stays signed out.
    await page.fill('#username', 'sessions')
    await page.fill('#password', 'Str0ng!Passw0rd')
    await page.click('#login-button')
    await page.waitForSelector('#status[data-state="connected"]', wait)
    await page.click('#logout-button')
    await page.waitForSelector('#status[data-state="signed-out"]', wait)
    t.equal(await page.inputValue('#username'), '')
    t.equal(await page.inputValue('#password'), '')
    await page.reload()
    t.equal(await page.isVisible('#login-view'), true)
    t.equal(await page.textContent('#status'), 'not signed in')
    t.same(errors, [], 'no uncaught errors in the page')
  },
)
