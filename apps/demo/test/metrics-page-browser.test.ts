// The admin page /admin/metrics (issue 18) in real Chromium: while calls arrive on HTTP, WebSocket and TCP
// it shows calls per second for each transport, a p99 and the errors per second, from /metrics. /metrics
// answers operators only (issue 29 item 5): the page asks for a token and scrapes with an admin's.
import { createClient } from '@trivium/client/node'
import t from 'tap'
import { endpoints } from '../dist/generated/endpoints.js'
import { launchChromium, skipBrowser } from './chromium.js'
import { ADMIN, startDemo } from './helpers.js'

t.test('live calls/s per transport, p99 and errors/s', { timeout: 120_000, skip: skipBrowser }, async (t) => {
  const { app } = await startDemo(t, { rateLimitDefault: false })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const tcpPort = app.triviumTcp.address()!.port
  const ws = createClient({ transport: 'websocket', url: `ws://127.0.0.1:${port}/ws`, endpoints })
  const tcp = createClient({ transport: 'tcp', host: '127.0.0.1', port: tcpPort, endpoints })
  t.teardown(async () => {
    await ws.close()
    await tcp.close()
  })
  const browser = await launchChromium(t)
  const page = await browser.newPage({ viewport: { width: 800, height: 700 } })
  const problems: string[] = []
  page.on('pageerror', (err) => problems.push(err.message))
  await page.goto(`http://127.0.0.1:${port}/admin/metrics?every=400`)
  await page.waitForSelector('#token-form', { state: 'visible', timeout: 30_000 })
  t.equal(await page.textContent('#status'), "/metrics needs METRICS_TOKEN or an admin's access token")
  const admin = await app.inject({ method: 'POST', url: '/auth/login', payload: ADMIN })
  await page.fill('#token', admin.json().accessToken)
  await page.click('#token-form button')

  let loading = true
  const load = (async () => {
    while (loading) {
      await Promise.all([
        fetch(`http://127.0.0.1:${port}/health`),
        fetch(`http://127.0.0.1:${port}/auth/me`), // 401: an error
        ws.call('health', {}),
        tcp.call('health', {}),
      ])
    }
  })()
  const positive = (id: string) =>
    page.waitForFunction((sel) => Number(document.getElementById(sel)?.textContent) > 0, id, {
      timeout: 30_000,
    })
  await Promise.all(['rate-http', 'rate-websocket', 'rate-tcp', 'errors'].map(positive))
  // The p99 as shown while calls arrive: read in the same turn as the wait (the page redraws every 400 ms,
  // and once the load below stops, a redraw over a window with no calls says "no calls").
  const p99 = await page.waitForFunction(
    () => {
      const text = document.getElementById('p99')?.textContent ?? ''
      return /ms/.test(text) ? text : false
    },
    undefined,
    { timeout: 30_000 },
  )
  const p99Text = await p99.jsonValue()
  if (process.env.SCREENSHOT) await page.screenshot({ path: process.env.SCREENSHOT })
  loading = false
  await load
  t.match(p99Text, /^≤ [\d.]+ ms$/)
  t.same(problems, [])
})
