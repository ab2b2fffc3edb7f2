// Idempotency keys (PROTOCOL.md "Idempotency keys"), over real sockets on every transport: the same key
// and body give the first answer and one row; another body is a 422; concurrent duplicates give one row
// (the others the first answer or a 409); @trivium/client sends one key per call and reuses it when it
// retries after losing the answer.
import { once } from 'node:events'
import net from 'node:net'
import { createClient } from '@trivium/client/node'
import t from 'tap'
import { endpoints } from '../dist/generated/endpoints.js'
import { BACKENDS, backendConfig, registerAndLogin, startDemo } from './helpers.js'
import { failure, transportClients } from './transports.js'

const MISMATCH =
  'This Idempotency-Key was used with a different request body: use a new key for a new request'
const IN_PROGRESS = 'A request with this Idempotency-Key is still being processed: retry after it finishes'

/** A TCP proxy that, once armed, drops both connections at the first bytes the server sends back. */
async function lossyProxy(target: number) {
  let armed = false
  const seen: Buffer[] = []
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1')
    client.on('error', () => {})
    upstream.on('error', () => {})
    client.on('data', (chunk) => {
      seen.push(chunk)
      upstream.write(chunk)
    })
    upstream.on('data', (chunk) => {
      if (armed) {
        armed = false
        client.destroy()
        upstream.destroy()
      } else client.write(chunk)
    })
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    port: (server.address() as net.AddressInfo).port,
    arm() {
      armed = true
      seen.length = 0
    },
    get armed() {
      return armed
    },
    /** The UUIDs in what the client sent since `arm()` (TCP frames are not masked). */
    sentUuids() {
      return (
        Buffer.concat(seen)
          .toString('latin1')
          .match(/[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}/g) ?? []
      )
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

for (const backend of BACKENDS)
  t.test(`idempotency keys (${backend})`, async (t) => {
    const demo = await startDemo(t, backendConfig(backend))
    const { app, sql } = demo
    const { tokens } = await registerAndLogin(app, 'ida')
    const other = await registerAndLogin(app, 'otto')
    const clients = await transportClients(t, demo, tokens.accessToken)
    const base = `http://127.0.0.1:${(app.server.address() as net.AddressInfo).port}`
    const rows = async (title: string) =>
      (await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM demo_tasks WHERE title = $1', [title]))
        .rows[0]?.n
    const post = (body: unknown, key: string | undefined, token = tokens.accessToken) =>
      fetch(`${base}/tasks`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          ...(key === undefined ? {} : { 'idempotency-key': key }),
        },
        body: JSON.stringify(body),
      }).then(async (res) => ({ status: res.status, headers: res.headers, body: await res.json() }))

    await t.test('HTTP: the same key and body replay the first answer; another body is a 422', async (t) => {
      const first = await post({ title: 'http once' }, 'key-http-1')
      t.equal(first.status, 201)
      t.equal(first.headers.get('idempotent-replayed'), null)
      const again = await post({ title: 'http once' }, 'key-http-1')
      t.equal(again.status, 201, 'same status')
      t.same(again.body, first.body, 'same body (same id and timestamps)')
      t.equal(again.headers.get('idempotent-replayed'), 'true')
      // The draft's Structured Field form ("…") is the same key.
      t.same((await post({ title: 'http once' }, '"key-http-1"')).body, first.body)
      t.equal(await rows('http once'), 1, 'one row')
      const changed = await post({ title: 'http other' }, 'key-http-1')
      t.equal(changed.status, 422)
      t.match(changed.body, {
        statusCode: 422,
        code: 'TRV_UNPROCESSABLE_CONTENT',
        error: 'UnprocessableContentException',
        message: MISMATCH,
        requestId: String,
      })
      t.equal(await rows('http other'), 0, 'nothing stored for the mismatch')
      // Keys are per user: another user's same key is a call of its own.
      const otto = await post({ title: 'http once' }, 'key-http-1', other.tokens.accessToken)
      t.equal(otto.status, 201)
      t.not(otto.body.id, first.body.id)
      // Without a key every call is a new task.
      await post({ title: 'no key' }, undefined)
      await post({ title: 'no key' }, undefined)
      t.equal(await rows('no key'), 2)
    })

    await t.test('HTTP: a malformed key is a 400 and stores nothing', async (t) => {
      for (const key of ['', 'a b', 'x'.repeat(256), 'é'])
        t.match(
          await post({ title: 'bad key' }, key).catch((err) => ({ status: 0, body: String(err) })),
          {
            status: 400,
            body: {
              statusCode: 400,
              code: 'TRV_VALIDATION',
              error: 'ValidationException',
              message:
                'Invalid Idempotency-Key header: must be given once, 1 to 255 visible ASCII characters (e.g. a UUID)',
            },
          },
          JSON.stringify(key),
        )
      t.equal(await rows('bad key'), 0)
    })

    await t.test('concurrent duplicates: one row; the others the first answer or a 409', async (t) => {
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => post({ title: 'concurrent' }, 'key-concurrent')),
      )
      t.equal(await rows('concurrent'), 1, 'one row')
      const created = answers.filter((a) => a.status === 201)
      t.ok(created.length >= 1)
      t.same(new Set(created.map((a) => a.body.id)).size, 1, 'every 201 is the same task')
      for (const a of answers.filter((x) => x.status !== 201))
        t.match(a, {
          status: 409,
          body: { statusCode: 409, code: 'TRV_CONFLICT', error: 'ConflictException', message: IN_PROGRESS },
        })
    })

    await t.test('WebSocket and TCP (JSON and binary): the same key in frame metadata', async (t) => {
      for (const { name, client } of clients) {
        const key = `key-${name.replace(/ /g, '-')}`
        const title = `frames ${name}`
        const first = await client.call('tasks.create', { title }, { idempotencyKey: key })
        const again = await client.call('tasks.create', { title }, { idempotencyKey: key })
        t.same(again, first, `${name}: the first answer`)
        t.equal(await rows(title), 1, `${name}: one row`)
        t.same(
          await failure(client.call('tasks.create', { title: `${title} changed` }, { idempotencyKey: key })),
          { statusCode: 422, kind: 'UnprocessableContentException', message: MISMATCH, details: undefined },
          `${name}: another body is the 422`,
        )
      }
      // One key, any transport: the call made over HTTP is replayed over TCP.
      const byHttp = await post({ title: 'cross transport' }, 'key-cross')
      const tcp = clients.find((c) => c.name.startsWith('tcp'))?.client
      t.same(await tcp?.call('tasks.create', { title: 'cross transport' }, { idempotencyKey: 'key-cross' }), {
        ...byHttp.body,
        createdAt: new Date(byHttp.body.createdAt),
        updatedAt: new Date(byHttp.body.updatedAt),
      })
      t.equal(await rows('cross transport'), 1)
    })

    await t.test('@trivium/client retries with the same key after losing the answer', async (t) => {
      // HTTP: a fetch that delivers the request, then loses the response (as a dropped connection).
      const keys: (string | null)[] = []
      let lose = true
      const http = createClient({
        transport: 'http',
        url: base,
        endpoints,
        token: tokens.accessToken,
        retries: 2,
        retryDelayMs: 10,
        fetch: async (url: string, init: RequestInit) => {
          keys.push(new Headers(init.headers).get('idempotency-key'))
          const res = await fetch(url, init)
          if (lose) {
            lose = false
            await res.arrayBuffer()
            throw new TypeError('fetch failed')
          }
          return res
        },
      })
      t.teardown(() => http.close())
      const task = await http.call('tasks.create', { title: 'retried http' })
      t.equal(keys.length, 2, 'two attempts')
      t.match(keys[0], /^[0-9a-f-]{36}$/, 'a generated key')
      t.equal(keys[1], keys[0], 'the retry carries the same key')
      t.equal(await rows('retried http'), 1, 'one row')
      t.equal(task.title, 'retried http')
      const next = await http.call('tasks.create', { title: 'retried http' })
      t.not(next.id, task.id, 'a new call gets a new key')

      // WebSocket and TCP: a proxy drops the connection when the answer comes back.
      const tcpPort = app.triviumTcp.address()?.port as number
      const port = (app.server.address() as net.AddressInfo).port
      for (const transport of ['websocket', 'tcp'] as const) {
        const proxy = await lossyProxy(transport === 'tcp' ? tcpPort : port)
        t.teardown(() => proxy.close())
        const client = createClient({
          ...(transport === 'tcp'
            ? { transport, host: '127.0.0.1', port: proxy.port }
            : { transport, url: `ws://127.0.0.1:${proxy.port}/ws` }),
          endpoints,
          token: tokens.accessToken,
          format: 'json',
          retries: 2,
          retryDelayMs: 10,
          reconnectDelayMs: 10,
        })
        t.teardown(() => client.close())
        await client.connect()
        proxy.arm()
        const title = `retried ${transport}`
        const created = await client.call('tasks.create', { title })
        t.notOk(proxy.armed, `${transport}: the first answer was lost`)
        t.equal(await rows(title), 1, `${transport}: one row`)
        t.equal(created.title, title)
        if (transport === 'tcp') {
          // Every attempt (two, or more when a loaded machine makes the client retry again) has the same key.
          const keys = proxy.sentUuids()
          t.ok(
            keys.length >= 2 && keys.every((k) => k === keys[0]),
            `tcp: every attempt carried the same key (${keys.join(', ')})`,
          )
        }
      }
    })
  })
