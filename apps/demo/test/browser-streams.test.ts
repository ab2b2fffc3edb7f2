// The web page's streams of requests in real Chromium (issue 34 item 3): "Import tasks" streams one line
// per task to tasks.import and shows its one summary; ticking a task is an edit on the page's tasks.sync
// stream, whose confirmations and other clients' changes keep every page current, and whose refusals
// (not the owner) are shown while the task stays as stored.
import t from 'tap'
import { launchChromium, skipBrowser } from './chromium.js'
import { startDemo } from './helpers.js'

t.test(
  'import over tasks.import, edits and live changes over tasks.sync',
  { timeout: 240_000, skip: skipBrowser },
  async (t) => {
    const { app } = await startDemo(t)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as { port: number }
    const browser = await launchChromium(t)
    const errors: string[] = []

    async function signUp(username: string) {
      const page = await browser.newPage()
      page.on('pageerror', (err) => errors.push(`${username}: ${err.message}`))
      await page.goto(`http://127.0.0.1:${port}/`)
      await page.fill('#username', username)
      await page.fill('#password', 'Str0ng!Passw0rd')
      await page.fill('#email', `${username}@example.com`)
      await page.click('#register-button')
      await page.waitForSelector('#status[data-state="connected"]', { timeout: 60_000 })
      return page
    }
    const owner = await signUp('owner')
    const other = await signUp('other')
    const titles = (page: typeof owner) =>
      page.$$eval('#tasks li span', (spans) => spans.map((s) => s.textContent))

    await owner.click('#import summary')
    await owner.fill('#import-text', 'Alpha\n\nBeta\n')
    await owner.click('#import-button')
    await owner.waitForFunction(
      () => document.getElementById('import-result')?.textContent !== '',
      undefined,
      {
        timeout: 60_000,
      },
    )
    t.equal(await owner.textContent('#import-result'), 'Imported 2 tasks')
    await other.waitForFunction(() => document.querySelectorAll('#tasks li').length === 2, undefined, {
      timeout: 60_000,
    })
    t.same(await titles(other), ['Beta', 'Alpha'], 'the import reached the other page live (newest first)')

    // Not the owner: the edit is refused on the stream, the page says why and shows the task as stored.
    await other.click('#tasks li:last-child input[type=checkbox]')
    await other.waitForFunction(() => document.getElementById('task-error')?.textContent !== '', undefined, {
      timeout: 60_000,
    })
    t.equal(await other.textContent('#task-error'), 'Only the owner of a task or an admin can change it')
    t.equal(await other.isChecked('#tasks li:last-child input[type=checkbox]'), false)

    // The owner's edit is confirmed on its stream and reaches the other page as another client's change.
    await owner.click('#tasks li:last-child input[type=checkbox]')
    await owner.waitForSelector('#tasks li.done', { timeout: 60_000 })
    await other.waitForSelector('#tasks li.done', { timeout: 60_000 })
    t.equal(await other.textContent('#tasks li.done span'), 'Alpha')
    t.same(errors, [], 'no uncaught errors in the pages')
  },
)
