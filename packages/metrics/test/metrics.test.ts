// @trivium/metrics: every metric of issue 18 moves when its event happens, on every transport.
import { channel } from 'node:diagnostics_channel'
import { EventEmitter } from 'node:events'
import trivium, { RateLimitExceededException, ValidationException } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import triviumMetrics, { CHANNELS } from '@trivium/metrics'
import Fastify from 'fastify'
import { collectDefaultMetrics, Registry } from 'prom-client'
import t from 'tap'

async function app(options: Parameters<typeof triviumMetrics>[1] = { expose: true }) {
  const fastify = Fastify()
  await fastify.register(trivium)
  // Registered before metrics, yet metrics (first) still sees the calls it refuses.
  fastify.trivium.use(
    async (call, next) => {
      if (call.headers['x-deny'] === '1' || call.metadata.deny === '1')
        throw new RateLimitExceededException(7)
      return next()
    },
    { name: 'rate-limit' },
  )
  await fastify.register(triviumMetrics, options)
  fastify.trivium.endpoint('echo', { method: 'POST', url: '/echo' }, (req: { n?: number }) => {
    if (req.n === -1) throw new ValidationException('n must not be -1')
    return { n: req.n ?? 0 }
  })
  fastify.trivium.stream('count', { method: 'GET', url: '/count' }, async function* () {
    yield 1
    yield 2
  })
  t.teardown(() => fastify.close())
  await fastify.ready()
  return fastify
}

async function scrape(fastify: Awaited<ReturnType<typeof app>>): Promise<string> {
  return fastify.metrics.registry.metrics()
}
/** The value of one series line, or undefined when the series does not exist. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

t.test('GET /metrics is off by default', async (t) => {
  const fastify = await app({})
  t.equal((await fastify.inject('/metrics')).statusCode, 404)
})

t.test('HTTP end to end: calls by code, latency histogram, in flight, rate-limit denials', async (t) => {
  const fastify = await app()
  t.equal((await fastify.inject({ method: 'POST', url: '/echo', payload: { n: 1 } })).statusCode, 200)
  t.equal((await fastify.inject({ method: 'POST', url: '/echo', payload: { n: 2 } })).statusCode, 200)
  t.equal((await fastify.inject({ method: 'POST', url: '/echo', payload: { n: -1 } })).statusCode, 400)
  const denied = await fastify.inject({
    method: 'POST',
    url: '/echo',
    payload: {},
    headers: { 'x-deny': '1' },
  })
  t.equal(denied.statusCode, 429)
  const res = await fastify.inject('/metrics')
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  const text = res.body
  t.equal(value(text, 'trivium_calls_total{endpoint="echo",transport="http",code="OK"}'), 2)
  t.equal(value(text, 'trivium_calls_total{endpoint="echo",transport="http",code="TRV_VALIDATION"}'), 1)
  t.equal(value(text, 'trivium_calls_total{endpoint="echo",transport="http",code="TRV_RATE_LIMITED"}'), 1)
  t.equal(value(text, 'trivium_rate_limit_denials_total{endpoint="echo",transport="http"}'), 1)
  t.equal(value(text, 'trivium_call_duration_seconds_count{endpoint="echo",transport="http"}'), 4)
  t.equal(value(text, 'trivium_call_duration_seconds_bucket{le="+Inf",endpoint="echo",transport="http"}'), 4)
  t.equal(value(text, 'trivium_calls_in_flight{endpoint="echo",transport="http"}'), 0)
  t.match(text, '# TYPE trivium_call_duration_seconds histogram')
})

t.test(
  'WebSocket and TCP calls are labelled by transport; streams are in flight until they end',
  async (t) => {
    const fastify = await app()
    const log = fastify.log
    for (const protocol of ['websocket', 'tcp'] as const) {
      const payload = Buffer.from('{"n":3}')
      await fastify.trivium.invoke({
        endpoint: 'echo',
        protocol,
        payload,
        format: jsonFormat,
        requestId: 'r',
        log,
      })
    }
    await t.rejects(
      fastify.trivium.invoke({
        endpoint: 'echo',
        protocol: 'tcp',
        payload: Buffer.from('{}'),
        format: jsonFormat,
        requestId: 'r',
        log,
        metadata: { deny: '1' },
      }),
    )
    const opened = await fastify.trivium.invoke({
      endpoint: 'count',
      protocol: 'websocket',
      payload: Buffer.from('{}'),
      format: jsonFormat,
      requestId: 's',
      log,
    })
    let text = await scrape(fastify)
    t.equal(value(text, 'trivium_calls_total{endpoint="echo",transport="websocket",code="OK"}'), 1)
    t.equal(value(text, 'trivium_calls_total{endpoint="echo",transport="tcp",code="OK"}'), 1)
    t.equal(value(text, 'trivium_rate_limit_denials_total{endpoint="echo",transport="tcp"}'), 1)
    t.equal(value(text, 'trivium_streams_in_flight{endpoint="count",transport="websocket"}'), 1)
    const items: unknown[] = []
    for await (const item of opened.result as AsyncIterable<unknown>) items.push(item)
    t.same(items, [1, 2])
    text = await scrape(fastify)
    t.equal(value(text, 'trivium_streams_in_flight{endpoint="count",transport="websocket"}'), 0)
    t.equal(value(text, 'trivium_calls_total{endpoint="count",transport="websocket",code="OK"}'), 1)
  },
)

t.test('a stream the client cancels leaves the in-flight gauge', async (t) => {
  const fastify = await app()
  const opened = await fastify.trivium.invoke({
    endpoint: 'count',
    protocol: 'tcp',
    payload: Buffer.from('{}'),
    format: jsonFormat,
    requestId: 's',
    log: fastify.log,
  })
  const it = (opened.result as AsyncIterable<unknown>)[Symbol.asyncIterator]()
  await it.next()
  await it.return?.()
  t.equal(value(await scrape(fastify), 'trivium_streams_in_flight{endpoint="count",transport="tcp"}'), 0)
})

t.test('transport and auth events from the diagnostics channels', async (t) => {
  const fastify = await app()
  const publish = (name: string, message: unknown) => channel(name).publish(message)
  publish(CHANNELS.connection, { transport: 'websocket', event: 'open' })
  publish(CHANNELS.connection, { transport: 'websocket', event: 'open' })
  publish(CHANNELS.connection, { transport: 'websocket', event: 'close' })
  publish(CHANNELS.connection, { transport: 'tcp', event: 'open' })
  for (const reason of ['malformed', 'too_large', 'too_large', 'in_flight_limit', 'something-new'])
    publish(CHANNELS.frameRejected, { transport: 'tcp', reason })
  publish(CHANNELS.push, { transport: 'websocket', event: 'sent' })
  publish(CHANNELS.push, { transport: 'websocket', event: 'sent' })
  publish(CHANNELS.push, { transport: 'tcp', event: 'dropped' })
  for (const reason of ['expired', 'revoked', 'invalid', 'invalid', 'missing'])
    publish(CHANNELS.authFailure, { reason })
  publish(CHANNELS.authRevoked, { count: 3 })
  publish(CHANNELS.authRevoked, { count: 1 })
  const text = await scrape(fastify)
  t.equal(value(text, 'trivium_connections_open{transport="websocket"}'), 1)
  t.equal(value(text, 'trivium_connections_open{transport="tcp"}'), 1)
  t.equal(value(text, 'trivium_frames_rejected_total{transport="tcp",reason="malformed"}'), 1)
  t.equal(value(text, 'trivium_frames_rejected_total{transport="tcp",reason="too_large"}'), 2)
  t.equal(value(text, 'trivium_frames_rejected_total{transport="tcp",reason="in_flight_limit"}'), 1)
  t.equal(value(text, 'trivium_frames_rejected_total{transport="tcp",reason="other"}'), 1)
  t.equal(value(text, 'trivium_push_messages_total{transport="websocket",event="sent"}'), 2)
  t.equal(value(text, 'trivium_push_messages_total{transport="tcp",event="dropped"}'), 1)
  t.equal(value(text, 'trivium_auth_failures_total{reason="expired"}'), 1)
  t.equal(value(text, 'trivium_auth_failures_total{reason="revoked"}'), 1)
  t.equal(value(text, 'trivium_auth_failures_total{reason="invalid"}'), 2)
  t.equal(value(text, 'trivium_auth_failures_total{reason="missing"}'), 1)
  t.equal(value(text, 'trivium_auth_revocations_total'), 4)
  await fastify.close()
  publish(CHANNELS.authRevoked, { count: 5 })
  t.equal(value(await scrape(fastify), 'trivium_auth_revocations_total'), 4, 'unsubscribed on close')
})

t.test('Redis bus message lag from the diagnostics channel, channel names bounded', async (t) => {
  const fastify = await app()
  t.teardown(() => fastify.close())
  const publish = (message: unknown) => channel(CHANNELS.busMessage).publish(message)
  publish({ channel: 'trivium:push', lagSeconds: 0.002 })
  publish({ channel: 'trivium:push', lagSeconds: 0.3 })
  publish({ channel: 'trivium:push', lagSeconds: 'soon' }) // ignored
  for (let i = 0; i < 25; i++) publish({ channel: `c${i}`, lagSeconds: 0.001 })
  const text = await scrape(fastify)
  t.equal(value(text, 'trivium_bus_message_lag_seconds_count{channel="trivium:push"}'), 2)
  t.equal(value(text, 'trivium_bus_message_lag_seconds_bucket{le="0.005",channel="trivium:push"}'), 1)
  t.equal(value(text, 'trivium_bus_message_lag_seconds_count{channel="other"}'), 6, '20 names, then other')
})

t.test('PostgreSQL pool use and Redis reconnects', async (t) => {
  const redis = new EventEmitter()
  const pool = { totalCount: 7, idleCount: 5, waitingCount: 1 }
  const fastify = await app({ expose: true, pool, redis: { bus: redis } })
  let text = await scrape(fastify)
  t.equal(value(text, 'trivium_redis_reconnects_total{client="bus"}'), 0)
  redis.emit('reconnecting', 100)
  redis.emit('reconnecting', 200)
  pool.idleCount = 2
  text = await scrape(fastify)
  t.equal(value(text, 'trivium_redis_reconnects_total{client="bus"}'), 2)
  t.equal(value(text, 'trivium_pg_pool_connections{state="total"}'), 7)
  t.equal(value(text, 'trivium_pg_pool_connections{state="idle"}'), 2)
  t.equal(value(text, 'trivium_pg_pool_connections{state="waiting"}'), 1)
})

t.test('a bearer token protects /metrics', async (t) => {
  const token = 'a-metrics-token-0123456789'
  const fastify = await app({ expose: true, token })
  const none = await fastify.inject('/metrics')
  t.equal(none.statusCode, 401)
  t.equal(none.headers['www-authenticate'], 'Bearer')
  t.same(none.json(), {
    statusCode: 401,
    code: 'TRV_UNAUTHORIZED',
    error: 'UnauthorizedException',
    message: 'Metrics need a valid bearer token',
    requestId: none.json().requestId,
  })
  t.equal(
    (await fastify.inject({ url: '/metrics', headers: { authorization: 'Bearer wrong' } })).statusCode,
    401,
  )
  const ok = await fastify.inject({ url: '/metrics', headers: { authorization: `Bearer ${token}` } })
  t.equal(ok.statusCode, 200)
})

t.test('a separate listen address serves /metrics and the API server does not', async (t) => {
  const fastify = await app({ listen: { host: '127.0.0.1', port: 0 } })
  await fastify.inject({ method: 'POST', url: '/echo', payload: { n: 1 } })
  t.equal((await fastify.inject('/metrics')).statusCode, 404)
  const { port } = fastify.metrics.address()!
  const res = await fetch(`http://127.0.0.1:${port}/metrics`)
  t.equal(res.status, 200)
  t.equal(value(await res.text(), 'trivium_calls_total{endpoint="echo",transport="http",code="OK"}'), 1)
  t.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404)
})

/** Issue 44: the process figures an operator needs to see a leak or a stall, as every Node service shows. */
const PROCESS_SERIES: Array<[string, RegExp]> = [
  ['resident memory', /^process_resident_memory_bytes \d+$/m],
  ['heap used', /^nodejs_heap_size_used_bytes \d+$/m],
  ['event-loop lag', /^nodejs_eventloop_lag_seconds \d[\d.e-]*$/m],
  ['active handles', /^nodejs_active_handles\{type="\w+"\} \d+$/m],
]

t.test(
  'defaultMetrics: process memory, heap, event-loop lag and handles on /metrics (off by default)',
  async (t) => {
    const plain = await app({ listen: { host: '127.0.0.1', port: 0 } })
    const plainText = await (await fetch(`http://127.0.0.1:${plain.metrics.address()?.port}/metrics`)).text()
    t.notMatch(plainText, /^(process|nodejs)_/m, 'none without the option: they observe the whole process')

    const one = await app({ listen: { host: '127.0.0.1', port: 0 }, defaultMetrics: true })
    const two = await app({ expose: true, defaultMetrics: true })
    const base = await two.listen({ port: 0, host: '127.0.0.1' })
    for (const [label, url] of [
      ['listen address', `http://127.0.0.1:${one.metrics.address()?.port}/metrics`],
      ['expose', `${base}/metrics`],
    ] as const) {
      const res = await fetch(url)
      t.equal(res.status, 200, label)
      const text = await res.text()
      for (const [name, series] of PROCESS_SERIES) t.match(text, series, `${label}: ${name}`)
      t.match(text, /^# HELP trivium_calls_total /m, `${label}: with the Trivium metrics`)
    }
    // Collected once per process: prom-client's collectors (a GC observer, an event-loop monitor) never
    // stop, so one set per app would pile up with every app a process creates.
    t.equal(
      one.metrics.registry.getSingleMetric('nodejs_heap_size_used_bytes'),
      two.metrics.registry.getSingleMetric('nodejs_heap_size_used_bytes'),
      'the same collector serves both apps',
    )
  },
)

t.test('defaultMetrics with a registry that already collects them: no error, one series each', async (t) => {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const fastify = await app({ registry, defaultMetrics: true })
  const text = await fastify.metrics.registry.metrics()
  t.equal(text.match(/^process_resident_memory_bytes /gm)?.length, 1)
  for (const [name, series] of PROCESS_SERIES) t.match(text, series, name)
})

t.test('options are validated at registration', async (t) => {
  const cases: Array<[object, string, string]> = [
    [{ expose: 'yes' }, '@trivium/metrics: expose must be a boolean', 'TRV_METRICS_EXPOSE'],
    [
      { token: 'short' },
      '@trivium/metrics: token must be a string of at least 16 characters (e.g. openssl rand -hex 16)',
      'TRV_METRICS_TOKEN',
    ],
    [{ path: 'metrics' }, '@trivium/metrics: path must start with "/" (e.g. /metrics)', 'TRV_METRICS_PATH'],
    [
      { listen: { port: 70000 } },
      '@trivium/metrics: listen.port must be a port number (0 = any)',
      'TRV_METRICS_LISTEN_PORT',
    ],
    [
      { buckets: [1, 0.5] },
      '@trivium/metrics: buckets must be increasing positive numbers of seconds',
      'TRV_METRICS_BUCKETS',
    ],
    [
      { defaultMetrics: 'on' },
      '@trivium/metrics: defaultMetrics must be a boolean',
      'TRV_METRICS_DEFAULT_METRICS',
    ],
  ]
  for (const [options, message, code] of cases) {
    const fastify = Fastify()
    await fastify.register(trivium)
    await t.rejects(
      async () => {
        await fastify.register(triviumMetrics, options as never)
      },
      { message, code },
    )
    await fastify.close()
  }
})
