// The HTTP sender: a synchronous answer is sent in the handler's turn, an asynchronous one when the
// pipeline settles; either way exactly one response, with the same bytes.
import { Writable } from 'node:stream'
import trivium, { jsonSchemaModel, triviumFactoryOptions, ValidationException } from '@trivium/core'
import { REPEATED_CREDENTIAL } from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'

function logSink(): {
  stream: Writable
  lines: Array<{ level: number; msg?: string; err?: { code?: string } }>
} {
  const lines: Array<{ level: number; msg?: string; err?: { code?: string } }> = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line))
      done()
    },
  })
  return { stream, lines }
}

async function app(options: { middleware?: boolean; slowOnSend?: boolean } = {}) {
  const sink = logSink()
  const fastify = Fastify({ ...triviumFactoryOptions(), logger: { level: 'warn', stream: sink.stream } })
  await fastify.register(trivium)
  if (options.middleware) fastify.trivium.use(async (_call, next) => next())
  if (options.slowOnSend) {
    fastify.addHook('onSend', async (_request, reply, payload) => {
      await new Promise((resolve) => setTimeout(resolve, 20))
      reply.header('x-on-send', 'late')
      return payload
    })
  }
  fastify.trivium.endpoint('hello', { method: 'GET', url: '/hello' }, () => ({ hello: 'world' }))
  fastify.trivium.endpoint('later', { method: 'GET', url: '/later' }, async () => ({ later: true }))
  fastify.trivium.endpoint('bad', { method: 'GET', url: '/bad' }, () => {
    throw new ValidationException('bad input', [{ field: 'x', message: 'is bad' }])
  })
  fastify.trivium.endpoint('boom', { method: 'GET', url: '/boom' }, () => {
    throw new Error('secret detail')
  })
  const Who = jsonSchemaModel('Who', { type: 'object', properties: { x: { type: 'string' } } })
  fastify.trivium.endpoint('who', { method: 'GET', url: '/who', request: Who }, (_req, call) => ({
    credential: call.credential ?? null,
  }))
  return { fastify, lines: sink.lines }
}

for (const middleware of [false, true]) {
  for (const slowOnSend of [false, true]) {
    const name = `${middleware ? 'an async middleware' : 'no middleware'}, ${slowOnSend ? 'an async onSend hook' : 'no onSend hook'}`
    t.test(`${name}: one response each, same bytes, no "already sent" warning`, async (t) => {
      const { fastify, lines } = await app({ middleware, slowOnSend })
      await fastify.listen({ port: 0, host: '127.0.0.1' })
      t.teardown(() => fastify.close())
      const base = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`

      for (const [path, body] of [
        ['/hello', '{"hello":"world"}'],
        ['/later', '{"later":true}'],
      ] as const) {
        const res = await fetch(`${base}${path}`)
        t.equal(res.status, 200, path)
        t.equal(res.headers.get('content-type'), 'application/json; charset=utf-8', path)
        t.equal(res.headers.get('content-length'), String(body.length), path)
        t.equal(res.headers.get('x-on-send'), slowOnSend ? 'late' : null, path)
        t.equal(await res.text(), body, path)
      }

      const bad = await fetch(`${base}/bad`)
      t.equal(bad.status, 400)
      const badBody = await bad.json()
      t.same(badBody, {
        statusCode: 400,
        code: 'TRV_VALIDATION',
        error: 'ValidationException',
        message: 'bad input',
        requestId: badBody.requestId,
        details: [{ field: 'x', message: 'is bad' }],
      })
      t.match(badBody.requestId, /^req-/)

      const boom = await fetch(`${base}/boom`)
      t.equal(boom.status, 500)
      const boomText = await boom.text()
      t.notMatch(boomText, /secret detail/)
      t.equal(JSON.parse(boomText).code, 'TRV_INTERNAL')

      // Every request answered once: the only log lines are the one unexpected error.
      t.same(
        lines.map((l) => l.msg),
        ['unhandled error in endpoint'],
      )
    })
  }
}

t.test('the HTTP credential: the Authorization header, then the token query parameter', async (t) => {
  const { fastify } = await app()
  const ask = async (url: string, headers: Record<string, string> = {}) =>
    (await fastify.inject({ url, headers })).json()
  t.same(await ask('/who'), { credential: null })
  t.same(await ask('/who', { authorization: 'Bearer abc' }), { credential: 'abc' })
  t.same(await ask('/who?token=xyz'), { credential: 'xyz' })
  t.same(await ask('/who?token=xyz', { authorization: 'Bearer abc' }), { credential: 'abc' })
  const twice = await fastify.inject({ url: '/who?token=a&token=b' })
  t.equal(twice.statusCode, 401)
  t.equal(twice.json().message, REPEATED_CREDENTIAL)
})
