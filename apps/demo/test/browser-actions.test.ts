// The web page's basic task actions in real Chromium (issue 33): before sign-in the pill says "not signed
// in" (not "offline"); registering and signing in show a busy state and take no second click; each task
// shows its owner ("you" or the owner's username, issue 44 item 12); the owner ticks a task done, an admin deletes it (members hold
// no tasks:delete: no button for them), and the other pages follow live.
import t from 'tap'
import { launchChromium, skipBrowser } from './chromium.js'
import { ADMIN, startDemo } from './helpers.js'

// The page's busy state lasts while bcrypt runs: every hash and verify is computed (bcrypt-memo.ts).
process.env.TRIVIUM_TEST_BCRYPT_MEMO = '0'

t.test(
  'sign-in state, busy forms, owner shown, done and delete',
  { timeout: 240_000, skip: skipBrowser },
  async (t) => {
    const { app } = await startDemo(t)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as { port: number }
    const browser = await launchChromium(t)
    const errors: string[] = []

    async function open(username: string) {
      const page = await browser.newPage()
      page.on('pageerror', (err) => errors.push(`${username}: ${err.message}`))
      await page.goto(`http://127.0.0.1:${port}/`)
      return page
    }
    type Page = Awaited<ReturnType<typeof open>>
    async function register(page: Page, username: string) {
      await page.fill('#username', username)
      await page.fill('#password', 'Str0ng!Passw0rd')
      await page.fill('#email', `${username}@example.com`)
      await page.click('#register-button')
    }
    const none = (page: Page) =>
      page.waitForFunction(() => document.querySelectorAll('#tasks li').length === 0, undefined, {
        timeout: 60_000,
      })

    const owner = await open('owner')
    t.equal(await owner.textContent('#status'), 'not signed in')
    t.equal(await owner.getAttribute('#status', 'data-state'), 'signed-out')

    await register(owner, 'owner')
    // bcrypt takes a second or more: meanwhile the form says so and its buttons are disabled.
    await owner.waitForSelector('#login-form[aria-busy="true"]', { timeout: 10_000 })
    t.equal(await owner.textContent('#login-busy'), 'Registering…')
    t.equal(await owner.isDisabled('#register-button'), true)
    t.equal(await owner.isDisabled('#login-button'), true)
    await owner.waitForSelector('#status[data-state="connected"]', { timeout: 60_000 })
    t.equal(await owner.getAttribute('#login-form', 'aria-busy'), null, 'busy state cleared')

    const other = await open('other')
    await register(other, 'other')
    await other.waitForSelector('#status[data-state="connected"]', { timeout: 60_000 })

    await owner.fill('#new-title', 'Mine')
    await owner.click('#create-button')
    await owner.waitForSelector('#tasks li', { timeout: 60_000 })
    t.equal(await owner.textContent('#tasks li .owner'), 'you')
    t.equal(await owner.locator('#tasks li .delete').count(), 0, 'members hold no tasks:delete: no button')
    await other.waitForSelector('#tasks li', { timeout: 60_000 })
    t.equal(await other.textContent('#tasks li .owner'), 'owner')

    await owner.click('#tasks li input[type=checkbox]')
    await other.waitForSelector('#tasks li.done', { timeout: 60_000 })
    t.pass('done reached the other page')

    // An admin (tasks:delete) signs in with the form (busy while bcrypt runs) and deletes it.
    const admin = await open('admin')
    await admin.fill('#username', ADMIN.username)
    await admin.fill('#password', ADMIN.password)
    await admin.click('#login-button')
    await admin.waitForSelector('#login-form[aria-busy="true"]', { timeout: 10_000 })
    t.equal(await admin.textContent('#login-busy'), 'Signing in…')
    await admin.waitForSelector('#tasks li .delete', { timeout: 60_000 })
    t.equal(await admin.textContent('#tasks li .owner'), 'owner')
    await admin.click('#tasks li .delete')
    await none(admin)
    await none(owner)
    await none(other)
    t.pass('deleted, and gone from the other pages')
    const token = (await app.inject({ method: 'POST', url: '/auth/login', payload: ADMIN })).json()
      .accessToken
    const left = await app.inject({ url: '/tasks?limit=1', headers: { authorization: `Bearer ${token}` } })
    t.same(left.json().items, [], 'deleted on the server')

    await owner.click('#logout-button')
    await owner.waitForSelector('#status[data-state="signed-out"]', { timeout: 60_000 })
    t.equal(await owner.textContent('#status'), 'not signed in')
    t.same(errors, [], 'no uncaught errors in the pages')
  },
)
