// Issue 40 item 5 in real Chromium: a page on one origin (its own small server) drives the demo's API on
// another origin (another port) through the browser bundle of @trivium/client.
// - With the spec's default CORS (Content-Type, Authorization) the client's default calls work, and a
//   deadline or an idempotency key the page sets is refused by the browser's preflight, as documented;
//   the rate-limit headers are sent but hidden from the page's script.
// - With CORS_HEADERS adding Trivium-Timeout-Ms and Idempotency-Key, and CORS_EXPOSED_HEADERS, deadlines
//   and idempotency keys work from the page and it reads Idempotent-Replayed and X-RateLimit-*.
import { createServer, type Server } from 'node:http'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import type { Page } from 'playwright-core'
import t, { type Test } from 'tap'
import type { DemoConfig } from '../dist/config.js'
import type { PageApi } from './browser-cors-page.ts'
import { launchChromium, skipBrowser } from './chromium.js'
import { registerAndLogin, startDemo } from './helpers.js'

const PASSWORD = 'Str0ng!Passw0rd'
const SPEC_HEADERS = 'Content-Type, Authorization'
const EXPOSED = [
  'Idempotent-Replayed',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
]

/** The page's script (browser-cors-page.ts with the browser entry of @trivium/client), for the browser. */
async function pageBundle(): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('./browser-cors-page.ts', import.meta.url))],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    write: false,
    logLevel: 'silent',
  })
  return result.outputFiles[0]?.text ?? ''
}

/** The page's own origin: an HTML page and its script, nothing else. */
async function pageServer(t: Test, script: string): Promise<string> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/page.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(script)
      return
    }
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end('<!doctype html><title>another origin</title><script type="module" src="/page.js"></script>')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/`
}

/** The demo on its own origin (127.0.0.1, another port), with one user registered. */
async function api(t: Test, overrides: Partial<DemoConfig> = {}): Promise<string> {
  const { app } = await startDemo(t, overrides)
  await registerAndLogin(app, 'crossorigin', PASSWORD)
  await app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
}

const script = await pageBundle()
type CorsPage = { corsPage: PageApi }

t.test(
  '@trivium/client in Chromium, page and API on different origins',
  { timeout: 240_000, skip: skipBrowser },
  async (t) => {
    const browser = await launchChromium(t)
    const pageUrl = await pageServer(t, script)

    /** A fresh page of the page origin, its console kept (the browser's CORS refusals are logged there). */
    async function openPage(t: Test): Promise<{ page: Page; console: string[] }> {
      const page = await browser.newPage()
      t.teardown(() => page.close())
      const console: string[] = []
      page.on('console', (message) => console.push(message.text()))
      await page.goto(pageUrl)
      await page.waitForFunction(() => 'corsPage' in globalThis)
      return { page, console }
    }

    await t.test(
      "the spec's default CORS: default calls work; deadlines and keys need their headers",
      async (t) => {
        const base = await api(t)
        const direct = await fetch(`${base}/health`, { headers: { origin: 'http://elsewhere.test' } })
        t.equal(
          direct.headers.get('access-control-allow-headers'),
          SPEC_HEADERS,
          "the demo's CORS is the spec's",
        )
        const { page, console } = await openPage(t)
        const result = await page.evaluate(
          ([base, password]) => (globalThis as unknown as CorsPage).corsPage.withDefaultCors(base, password),
          [base, PASSWORD] as const,
        )
        t.equal(result.created, 'from another origin', 'a POST with the default options')
        t.same(result.listed, ['from another origin'], 'a GET with the default options')
        t.same(
          result.deadline,
          { network: true, message: 'Network error: Failed to fetch' },
          'a deadline the page sets',
        )
        t.same(
          result.key,
          { network: true, message: 'Network error: Failed to fetch' },
          'an idempotency key the page sets',
        )
        const refusals = console.filter((line) =>
          line.includes('is not allowed by Access-Control-Allow-Headers'),
        )
        t.ok(
          refusals.some((line) =>
            line.includes(
              'Request header field trivium-timeout-ms is not allowed by Access-Control-Allow-Headers in preflight response',
            ),
          ),
          'Chromium names the deadline header',
        )
        t.ok(
          refusals.some((line) =>
            line.includes(
              'Request header field idempotency-key is not allowed by Access-Control-Allow-Headers in preflight response',
            ),
          ),
          'Chromium names the idempotency header',
        )
        t.equal(result.status, 200)
        t.equal(
          result.rateLimitHeaderSeen,
          null,
          'X-RateLimit-Limit is hidden from the page without exposedHeaders',
        )
        const fromNode = await fetch(`${base}/tasks`, {
          headers: { authorization: `Bearer ${result.token}` },
        })
        t.equal(fromNode.headers.get('x-ratelimit-limit'), '100', 'though the server sends it')
      },
    )

    await t.test(
      'CORS_HEADERS and CORS_EXPOSED_HEADERS: deadlines, idempotency keys, readable headers',
      async (t) => {
        const base = await api(t, {
          corsHeaders: ['Content-Type', 'Authorization', 'Trivium-Timeout-Ms', 'Idempotency-Key'],
          corsExposedHeaders: EXPOSED,
        })
        const { page, console } = await openPage(t)
        const result = await page.evaluate(
          ([base, password]) =>
            (globalThis as unknown as CorsPage).corsPage.withHeadersAllowed(base, password),
          [base, PASSWORD] as const,
        )
        t.same(result.listed, [0, 0], 'calls with a deadline the page set (client option, then per call)')
        t.ok(result.sameTask, 'the same key twice: the first answer')
        t.equal(result.generated, 'retry-safe', 'a generated key (retries) is allowed too')
        t.match(result.badDeadline, {
          status: 400,
          body: {
            code: 'TRV_VALIDATION',
            message:
              'Invalid Trivium-Timeout-Ms header: must be a positive integer number of milliseconds, at most 2147483647',
          },
        })
        t.same(result.replay, [null, 'true'], 'Idempotent-Replayed is readable')
        t.ok(result.sameBody)
        t.equal(result.rateLimit[0], '100', 'X-RateLimit-Limit is readable')
        t.match(result.rateLimit[1], /^\d+$/, 'X-RateLimit-Remaining is readable')
        t.same(result.titles, ['once', 'replayed', 'retry-safe'], 'each key wrote one task')
        t.same(
          console.filter((line) => line.includes('CORS')),
          [],
          'no CORS refusal in the console',
        )
      },
    )
  },
)
