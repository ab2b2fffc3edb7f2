// Issue 16 item 17: the web page lists tasks newest first and pages through all of them (a button that
// also loads on scroll), in real Chromium. 130 tasks exist before signing in: the newest is on top,
// 50 are shown, then 100, then all, and the button goes away.
import t from 'tap'
import { launchChromium, skipBrowser } from './chromium.js'
import { startDemo } from './helpers.js'

t.test(
  'the page shows the newest task first and pages through every task',
  { timeout: 240_000, skip: skipBrowser },
  async (t) => {
    const { app, sql } = await startDemo(t)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as { port: number }
    await sql.query(
      "INSERT INTO demo_tasks (title, owner_id) SELECT 'Task ' || g, 1 FROM generate_series(1, 130) AS g",
    )

    const browser = await launchChromium(t)
    const page = await browser.newPage({ viewport: { width: 1000, height: 600 } })
    const errors: string[] = []
    page.on('pageerror', (err) => errors.push(err.message))
    await page.goto(`http://127.0.0.1:${port}/`)
    await page.fill('#username', 'pager')
    await page.fill('#password', 'Str0ng!Passw0rd')
    await page.fill('#email', 'pager@example.com')
    await page.click('#register-button')
    await page.waitForSelector('#status[data-state="connected"]', { timeout: 60_000 })

    const titles = () => page.locator('#tasks li span').allTextContents()
    const first = await titles()
    t.equal(first.length, 50, 'one page of 50')
    t.same(first.slice(0, 3), ['Task 130', 'Task 129', 'Task 128'], 'newest first')
    t.ok(await page.isVisible('#more-button'))

    // A DOM click, not page.click: that scrolls the button into view first, and the scroll alone may load
    // every remaining page (the infinite-scroll path, tested below), hiding the button before the click.
    await page.locator('#more-button').dispatchEvent('click')
    await page.waitForFunction(() => document.querySelectorAll('#tasks li').length >= 100)
    await page.locator('#more-button').scrollIntoViewIfNeeded() // infinite scroll loads the rest
    await page.waitForFunction(() => document.querySelectorAll('#tasks li').length === 130)
    const all = await titles()
    t.same(
      all,
      Array.from({ length: 130 }, (_, i) => `Task ${130 - i}`),
      'every task once, newest first',
    )
    await page.waitForSelector('#more-button', { state: 'hidden' })

    // A task created now goes on top.
    await page.fill('#new-title', 'Newest of all')
    await page.click('#create-button')
    await page.waitForFunction(
      () => document.querySelector('#tasks li span')?.textContent === 'Newest of all',
    )
    t.same(errors, [], 'no uncaught errors in the page')
  },
)
