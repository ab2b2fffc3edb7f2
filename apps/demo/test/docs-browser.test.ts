// /docs is Swagger UI over our OpenAPI document (issue 18): in real Chromium, "Authorize" with a bearer
// token and "Try it out" on GET /auth/me answer 200 from this server with the signed-in user.
import t from 'tap'
import { launchChromium, skipBrowser } from './chromium.js'
import { registerAndLogin, startDemo } from './helpers.js'

t.test(
  'Swagger UI at /docs: authorize with a bearer token, try GET /auth/me',
  { timeout: 120_000, skip: skipBrowser },
  async (t) => {
    const { app } = await startDemo(t)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as { port: number }
    const { tokens } = await registerAndLogin(app, 'swaggeruser')

    const browser = await launchChromium(t)
    const page = await browser.newPage()
    const problems: string[] = []
    page.on('pageerror', (err) => problems.push(err.message))
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(msg.text())
    })
    await page.goto(`http://127.0.0.1:${port}/docs`)
    const title = await page.waitForSelector('.swagger-ui .info .title', { timeout: 30_000 })
    t.match(await title.textContent(), /Trivium Tasks/)
    t.equal(await page.locator('.swagger-ui .topbar').count(), 0, "no top bar (Fastify's logo and link)")
    t.equal(await page.title(), 'Trivium Tasks API')

    // Authorize: the bearer scheme's value field, then the modal's Authorize button. Two boxes since issue 44
    // item 10 (the document lists every way in: `?token=` too), the bearer header first.
    await page.click('.swagger-ui .auth-wrapper .authorize')
    const boxes = page.locator('.modal-ux .auth-container')
    t.equal(await boxes.count(), 2, 'two boxes: the bearer header, then ?token=')
    t.match(await boxes.first().textContent(), /bearerAuth/)
    await boxes.first().locator('input[type=text], input[type=password]').first().fill(tokens.accessToken)
    await page.locator('.modal-ux .auth-btn-wrapper .authorize').first().click()
    await page.locator('.modal-ux .btn-done, .modal-ux .close-modal').first().click()

    const op = page.locator('.opblock', {
      has: page.locator('.opblock-summary-path', { hasText: /^\/auth\/me$/ }),
    })
    await op.locator('.opblock-summary').first().click()
    await op.locator('.try-out__btn').click()
    await op.locator('.execute').click()
    const status = await op.locator('.live-responses-table tr.response .response-col_status').first()
    await status.waitFor({ timeout: 30_000 })
    t.equal((await status.textContent())?.trim(), '200')
    const body = await op.locator('.live-responses-table .response-col_description pre').first().textContent()
    t.match(body, /"username": "swaggeruser"/)
    t.same(
      problems.filter((p) => /Content Security Policy|Refused/.test(p)),
      [],
      'no CSP violations',
    )
  },
)
