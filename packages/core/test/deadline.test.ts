// PROTOCOL.md "Deadlines", the core rule: the client's Trivium-Timeout-Ms (HTTP) or timeout_ms metadata
// (frames) and the endpoint's timeoutMs, the earlier wins; at the deadline call.signal aborts and the
// call is answered TimeoutException 504; an invalid value is a 400 naming it.
import { once } from 'node:events'
import trivium, { type TriviumCall } from '@trivium/core'
import Fastify from 'fastify'
import t, { type Test } from 'tap'

const INVALID_HEADER =
  'Invalid Trivium-Timeout-Ms header: must be a positive integer number of milliseconds, at most 2147483647'
const INVALID_METADATA =
  'Invalid timeout_ms metadata: must be a positive integer number of milliseconds, at most 2147483647'

function timeoutBody(ms: number, requestId: string) {
  return {
    statusCode: 504,
    code: 'TRV_TIMEOUT',
    error: 'TimeoutException',
    message: `Deadline of ${ms} ms exceeded`,
    requestId,
  }
}

async function app(t: Test) {
  const fastify = Fastify()
  await fastify.register(trivium)
  const seen: { middleware?: number | undefined; handler?: number | undefined; reason?: unknown } = {}
  fastify.trivium.use(async (call, next) => {
    seen.middleware = call.deadline
    return next()
  })
  // Ignores its signal until it aborts: the answer must not wait for the handler.
  const stuck = async (_req: unknown, call: TriviumCall) => {
    seen.handler = call.deadline
    await once(call.signal, 'abort')
    seen.reason = call.signal.reason
    await new Promise((r) => setTimeout(r, 50))
    return { late: true }
  }
  fastify.trivium.endpoint('stuck', { method: 'GET', url: '/stuck' }, stuck)
  fastify.trivium.endpoint('stuckServer', { method: 'GET', url: '/stuck-server', timeoutMs: 60 }, stuck)
  fastify.trivium.endpoint('quick', { method: 'GET', url: '/quick' }, (_req, call) => ({
    deadline: call.deadline ?? null,
  }))
  fastify.trivium.stream('ticks', { method: 'GET', url: '/ticks' }, async function* (_req, call) {
    for (let i = 0; ; i++) {
      yield { i }
      await new Promise((r) => setTimeout(r, 20))
      if (call.signal.aborted) return
    }
  })
  t.teardown(() => fastify.close())
  return { fastify, seen }
}

t.test('the client deadline aborts call.signal and answers 504 TimeoutException', async (t) => {
  const { fastify, seen } = await app(t)
  const res = await fastify.inject({ url: '/stuck', headers: { 'trivium-timeout-ms': '100' } })
  t.equal(res.statusCode, 504)
  t.same(res.json(), timeoutBody(100, res.json().requestId))
  t.match(seen.reason, {
    name: 'TimeoutException',
    code: 'TRV_TIMEOUT',
    message: 'Deadline of 100 ms exceeded',
  })
  t.ok(
    seen.middleware !== undefined && seen.middleware > 0 && seen.middleware <= 100,
    `middleware saw ${seen.middleware}`,
  )
  t.ok(
    seen.handler !== undefined && seen.handler <= (seen.middleware as number),
    `handler saw ${seen.handler}`,
  )
})

t.test("the endpoint's timeoutMs and the client's deadline: the earlier wins", async (t) => {
  const { fastify } = await app(t)
  const later = await fastify.inject({ url: '/stuck-server', headers: { 'trivium-timeout-ms': '60000' } })
  t.same(later.json(), timeoutBody(60, later.json().requestId), 'the endpoint is earlier')
  const earlier = await fastify.inject({ url: '/stuck-server', headers: { 'trivium-timeout-ms': '30' } })
  t.same(earlier.json(), timeoutBody(30, earlier.json().requestId), 'the client is earlier')
})

t.test('call.deadline: the time left, or undefined without a deadline', async (t) => {
  const { fastify } = await app(t)
  t.same((await fastify.inject('/quick')).json(), { deadline: null })
  const { deadline } = (
    await fastify.inject({ url: '/quick', headers: { 'trivium-timeout-ms': '5000' } })
  ).json()
  t.ok(deadline > 0 && deadline <= 5000, `deadline ${deadline}`)
  const max = await fastify.inject({ url: '/quick', headers: { 'trivium-timeout-ms': '2147483647' } })
  t.equal(max.statusCode, 200, 'the documented maximum is accepted')
})

t.test('a value that is not a positive integer of ms, or over the maximum, is a 400 naming it', async (t) => {
  const { fastify } = await app(t)
  for (const value of [
    '0',
    '-1',
    '1.5',
    '1e3',
    'abc',
    '',
    ' ',
    '2147483648',
    '9007199254740992',
    '12345678901',
    '+5',
    '0x10',
  ]) {
    const res = await fastify.inject({ url: '/quick', headers: { 'trivium-timeout-ms': value } })
    t.equal(res.statusCode, 400, JSON.stringify(value))
    t.same(
      res.json(),
      {
        statusCode: 400,
        code: 'TRV_VALIDATION',
        error: 'ValidationException',
        message: INVALID_HEADER,
        requestId: res.json().requestId,
      },
      JSON.stringify(value),
    )
  }
  const twice = await fastify.inject({ url: '/quick', headers: { 'trivium-timeout-ms': ['100', '200'] } })
  t.equal(twice.json().message, INVALID_HEADER, 'given twice')
})

t.test('frames read the timeout_ms metadata (the invoker path)', async (t) => {
  const { fastify, seen } = await app(t)
  await fastify.ready()
  const init = {
    endpoint: 'stuck',
    protocol: 'tcp' as const,
    payload: new Uint8Array(0),
    format: fastify.trivium.formats.get('json')!,
    requestId: 'c:1',
    log: fastify.log,
  }
  await t.rejects(fastify.trivium.invoke({ ...init, metadata: { timeout_ms: '50' } }), {
    name: 'TimeoutException',
    message: 'Deadline of 50 ms exceeded',
  })
  t.match(seen.reason, { name: 'TimeoutException' })
  t.throws(() => fastify.trivium.start({ ...init, metadata: { timeout_ms: '0' } }), {
    name: 'ValidationException',
    message: INVALID_METADATA,
  })
  // A WebSocket upgrade's headers are the connection's, not the call's: they carry no deadline.
  const { call } = fastify.trivium.start({
    ...init,
    endpoint: 'quick',
    protocol: 'websocket',
    headers: { 'trivium-timeout-ms': '0' },
  })
  t.equal(call.deadline, undefined)
})

t.test('the deadline bounds the whole stream: items, then the error event', async (t) => {
  const { fastify } = await app(t)
  const res = await fastify.inject({ url: '/ticks', headers: { 'trivium-timeout-ms': '150' } })
  t.equal(res.statusCode, 200)
  const events = res.body.split('\n\n').filter((e) => e.startsWith('id:') || e.startsWith('event:'))
  t.ok(events.length >= 2, `${events.length} events`)
  t.match(events[0], /^id: 0\nevent: item\ndata: \{"i":0\}$/)
  const last = events[events.length - 1] as string
  t.match(last, /^event: error\ndata: /)
  const body = JSON.parse(last.slice(last.indexOf('data: ') + 6))
  t.same(body, timeoutBody(150, body.requestId))
})
