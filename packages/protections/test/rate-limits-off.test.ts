// A declared rate limit holds only where a rate limiter runs: without one core refuses to start; with
// `rateLimit: false` the application switched limits off itself, and start-up says which are not applied.
import trivium, { triviumFactoryOptions } from '@trivium/core'
import triviumProtections from '@trivium/protections'
import Fastify from 'fastify'
import t from 'tap'

const limited = { method: 'POST', url: '/login', rateLimit: { requests: 5, windowMs: 60_000 } } as const

t.test('a declared limit without a rate limiter refuses to start', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(trivium)
  await app.register(triviumProtections, {
    rateLimit: { afterAuth: false, defaultLimit: { requests: 100, windowMs: 60_000 } },
  })
  app.trivium.endpoint('login', limited, () => ({}))
  await app.ready()

  const none = Fastify()
  t.teardown(() => none.close())
  await none.register(trivium)
  none.trivium.endpoint('login', limited, () => ({}))
  await t.rejects(async () => none.ready(), {
    message:
      '@trivium/core: endpoint "login" declares rateLimit: {"requests":5,"windowMs":60000}, but no middleware enforces "rateLimit" where it is registered: register @trivium/protections in this context or an ancestor',
  })
})

t.test('rateLimit: false switches declared limits off, and says so at start-up', async (t) => {
  const lines: Array<{ level: number; msg: string }> = []
  const app = Fastify({
    ...triviumFactoryOptions(),
    logger: { level: 'warn', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
  })
  t.teardown(() => app.close())
  await app.register(trivium)
  await app.register(triviumProtections, { rateLimit: false })
  app.trivium.endpoint('login', limited, () => ({ ok: true }))
  app.trivium.endpoint('open', { method: 'GET', url: '/open' }, () => ({ ok: true }))
  await app.ready()
  t.same(
    lines.map((l) => [l.level, l.msg]),
    [
      [
        40,
        '@trivium/protections: rate limiting is off (rateLimit: false): the limits declared on login are not applied',
      ],
    ],
  )
  for (let i = 0; i < 7; i++) t.equal((await app.inject({ method: 'POST', url: '/login' })).statusCode, 200)
})
