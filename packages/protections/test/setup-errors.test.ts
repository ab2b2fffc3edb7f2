// Issue 43 item 4: @trivium/protections' setup refusals are TypeErrors with a stable code from one table
// (src/setup-errors.ts), and the README's "Setup errors" table lists exactly those codes.
import { readFileSync } from 'node:fs'
import trivium from '@trivium/core'
import { SHARED_SETUP, UNKNOWN_OPTION } from '@trivium/core/internal'
import triviumProtections, { cors, rateLimit, securityHeaders } from '@trivium/protections'
import Fastify, { type FastifyPluginAsync } from 'fastify'
import t from 'tap'
import { SETUP } from '../src/setup-errors.js'

t.test("the README's table lists every code of the table, and nothing else", async (t) => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  const section = readme.split('\n## Setup errors\n')[1]?.split('\n## ')[0] ?? ''
  const listed = [...section.matchAll(/^\| `(TRV_[A-Z_]+)` \|/gm)].map((m) => m[1])
  t.same(listed.sort(), [UNKNOWN_OPTION, 'TRV_SETUP_UNKNOWN_ENDPOINT', ...Object.keys(SETUP.rows)].sort())
  t.ok('TRV_SETUP_UNKNOWN_ENDPOINT' in SHARED_SETUP.rows)
})

t.test('each refusal is a TypeError with its code, its message unchanged', async (t) => {
  const cases: [FastifyPluginAsync<never>, unknown, string, string][] = [
    [
      triviumProtections as never,
      { rateLimit: { afterAuth: 'yes' } },
      'TRV_PROTECTIONS_AFTER_AUTH',
      '@trivium/protections: afterAuth must be a boolean',
    ],
    [
      rateLimit as never,
      { defaultLimit: { requests: 0, windowMs: 1 } },
      'TRV_PROTECTIONS_RATE_LIMIT',
      '@trivium/protections: defaultLimit.requests must be a positive integer',
    ],
    [
      rateLimit as never,
      { store: {} },
      'TRV_PROTECTIONS_STORE',
      '@trivium/protections: store must have a hit(key, limit) method',
    ],
    [
      rateLimit as never,
      { whenStoreDown: 'maybe', redis: { eval() {}, evalsha() {} } },
      'TRV_PROTECTIONS_WHEN_STORE_DOWN',
      '@trivium/protections: whenStoreDown must be "memory", "open" or "closed"',
    ],
    [
      rateLimit as never,
      { redis: {} },
      'TRV_PROTECTIONS_REDIS',
      '@trivium/protections: redis must be an ioredis client (needs eval and evalsha)',
    ],
    [
      rateLimit as never,
      { sweepIntervalMs: -1 },
      'TRV_PROTECTIONS_SWEEP_INTERVAL',
      '@trivium/protections: sweepIntervalMs must be a non-negative integer (milliseconds)',
    ],
    [
      cors as never,
      { maxAge: -1 },
      'TRV_PROTECTIONS_CORS',
      '@trivium/protections: cors.maxAge must be a non-negative integer (seconds)',
    ],
    [
      cors as never,
      { allowCredentials: true, allowedOrigins: ['*'] },
      'TRV_PROTECTIONS_CORS_CREDENTIALS',
      '@trivium/protections: cors.allowCredentials cannot be combined with the origin "*" (any site could make credentialed requests); list the allowed origins',
    ],
    [
      securityHeaders as never,
      { headers: { 'bad name': 'x' } },
      'TRV_PROTECTIONS_SECURITY_HEADERS',
      '@trivium/protections: invalid header name "bad name"',
    ],
    [
      triviumProtections as never,
      { cors: { maxAg: 1 } },
      UNKNOWN_OPTION,
      '@trivium/protections: unknown option "cors.maxAg" (did you mean "maxAge"?)',
    ],
  ]
  for (const [plugin, options, code, message] of cases) {
    const app = Fastify()
    t.teardown(() => app.close())
    await app.register(trivium)
    const err = await app.register(plugin, options as never).then(
      () => undefined,
      (e: unknown) => e,
    )
    t.ok(err instanceof TypeError, `${code}: a TypeError`)
    t.match(err, { code, message }, code)
  }
  const twice = Fastify()
  t.teardown(() => twice.close())
  await twice.register(cors)
  await t.rejects(async () => twice.register(cors), { code: 'TRV_PROTECTIONS_CORS_TWICE' })
  // Refused at ready(): an OPTIONS route added after cors with routes: 'all' (one registered before answers).
  const options = Fastify()
  t.teardown(() => options.close())
  await options.register(cors, { routes: 'all' })
  options.options('/legacy', async () => 'the app answers')
  await t.rejects(async () => options.ready(), {
    code: 'TRV_PROTECTIONS_CORS_OPTIONS_ROUTE',
    message:
      '@trivium/protections: cors answers every OPTIONS request as a CORS preflight, so the route OPTIONS /legacy would never run; remove it, or register @trivium/protections with { cors: false } (and keep @fastify/cors)',
  })
})
