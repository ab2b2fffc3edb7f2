import { encodeMetadata, encodeTcpFrame, FrameType } from '@trivium/wire'
import t from 'tap'
import { buildApp, dec, requestFrame, sleep, TcpClient, until } from './helpers.ts'

for (const mode of ['direct', 'inject'] as const) {
  t.test(`${mode}: requests, metadata, pipelining, out of order`, async (t) => {
    const { app, port, probe } = await buildApp({ mode })
    t.teardown(() => app.close())
    const c = await TcpClient.open(port)
    // three frames in one write, the slow one first
    const all = [
      requestFrame(1, 'slow', { ms: 100 }),
      requestFrame(2, 'echo', { a: 1 }),
      requestFrame(3, 'whoami', undefined, { auth_token: 'u5' }),
    ]
    c.write(Buffer.concat(all))
    const echo = await c.reply(2)
    t.equal(echo?.type, FrameType.RESPONSE)
    t.same(dec(echo?.payload as Uint8Array), { a: 1 })
    const who = await c.reply(3)
    t.same(dec(who?.payload as Uint8Array), {
      user: 5,
      protocol: 'tcp',
      metadata: { auth_token: 'u5', format: 'json' },
      ip: '127.0.0.1',
    })
    t.same(dec((await c.reply(1))?.payload as Uint8Array), { slept: 100 })
    t.ok(c.frames.findIndex((f) => f.requestId === 1) > c.frames.findIndex((f) => f.requestId === 2))
    t.equal(probe.hookRuns, mode === 'inject' ? 1 : 0, 'Fastify hooks run in inject mode only')

    // path parameter and query through the HTTP mapping
    c.write(requestFrame(4, 'items.get', { id: 'a/../b', q: 'x y' }))
    t.same(dec((await c.reply(4))?.payload as Uint8Array), { id: 'a/../b', q: 'x y' })

    for (const [id, name] of [
      [5, 'nope'],
      [6, '../admin'],
    ] as const) {
      c.write(requestFrame(id, name, {}))
      const nf = await c.reply(id)
      t.equal(nf?.type, FrameType.ERROR)
      t.same(dec(nf?.payload as Uint8Array), {
        statusCode: 404,
        code: 'TRV_NOT_FOUND',
        error: 'NotFoundException',
        message: `Unknown endpoint: ${name}`,
        requestId: `${dec(nf?.payload as Uint8Array).requestId.split(':')[0]}:${id}`,
      })
    }
    c.write(requestFrame(7, 'echo', undefined, { format: 'xml' }))
    t.match(dec((await c.reply(7))?.payload as Uint8Array), {
      statusCode: 415,
      message: 'Unsupported format: xml',
    })
    // bad metadata: an ERROR frame, the connection stays usable
    c.write(
      encodeTcpFrame({
        type: FrameType.REQUEST,
        requestId: 8,
        endpoint: 'echo',
        payload: new Uint8Array([1, 0, 0, 0, 9]),
      }),
    )
    t.match(dec((await c.reply(8))?.payload as Uint8Array), {
      code: 'TRV_VALIDATION',
      message: /Malformed metadata/,
    })
    const badJson = requestFrame(9, 'echo', {})
    badJson[badJson.length - 1] = 0x7b // "{{"
    c.write(badJson)
    t.match(dec((await c.reply(9))?.payload as Uint8Array), { statusCode: 400, code: 'TRV_VALIDATION' })
    const ping = encodeTcpFrame({ type: FrameType.PING, requestId: 77, payload: new Uint8Array() })
    c.write(ping)
    t.equal((await c.reply(77))?.type, FrameType.PONG)
    t.notOk(c.ended)
    c.socket.end()
  })

  t.test(`${mode}: streams, cancel, disconnect`, async (t) => {
    const { app, port, probe } = await buildApp({ mode })
    t.teardown(() => app.close())
    const c = await TcpClient.open(port)
    c.write(requestFrame(1, 'count', { n: 4 }))
    await c.reply(1, FrameType.STREAM_END)
    t.same(
      c.frames
        .filter((f) => f.requestId === 1)
        .map((f) => (f.type === FrameType.STREAM_ITEM ? dec(f.payload).i : 'end')),
      [0, 1, 2, 3, 'end'],
    )
    c.write(requestFrame(2, 'count', { n: 1000, ms: 10 }))
    await c.until((fs) => fs.filter((f) => f.requestId === 2).length >= 2)
    c.write(encodeTcpFrame({ type: FrameType.CANCEL, requestId: 2, payload: new Uint8Array() }))
    await until(() => probe.finallyRan === 2, 'the finally after CANCEL')
    t.equal(probe.finallyRan, 2, 'cancel ran the finally')
    c.write(requestFrame(3, 'count', { n: 1000, ms: 10 }))
    await c.until((fs) => fs.some((f) => f.requestId === 3))
    c.socket.destroy()
    await until(() => probe.finallyRan === 3, 'the finally after the disconnect')
    t.equal(probe.finallyRan, 3, 'disconnect ran the finally')
  })
}

t.test('an HTTP client cannot pass for TCP', async (t) => {
  const { app } = await buildApp({ mode: 'inject' })
  t.teardown(() => app.close())
  const res = await app.inject({
    method: 'GET',
    url: '/whoami?token=u1',
    headers: { 'x-trivium-transport': 'tcp', 'x-forwarded-for': '10.0.0.1', 'x-protocol': 'tcp' },
  })
  t.same(res.json(), { user: 1, protocol: 'http', metadata: {}, ip: '127.0.0.1' })
  const address = app.server.address() as { port: number }
  const real = await fetch(`http://127.0.0.1:${address.port}/whoami?auth_token=u2`, {
    headers: { 'x-transport': 'tcp' },
  })
  t.same(await real.json(), { user: null, protocol: 'http', metadata: {}, ip: '127.0.0.1' })
})

t.test('malformed frames: ERROR frame, then close, without allocating the claimed length', async (t) => {
  const { app, port } = await buildApp({ maxFrameBytes: 4096, partialFrameTimeoutMs: 150 })
  t.teardown(() => app.close())
  const cases: Array<[string, Uint8Array, number, object]> = [
    [
      'huge length',
      new Uint8Array([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 1]),
      1,
      {
        statusCode: 413,
        code: 'TRV_PAYLOAD_TOO_LARGE',
        message: 'Frame length 4294967295 is over the limit of 4096 bytes',
      },
    ],
    [
      'length under 5',
      new Uint8Array([0, 0, 0, 2, 0, 0]),
      0,
      { statusCode: 400, message: 'Frame length 2 is under the minimum of 5' },
    ],
    [
      'unknown type',
      new Uint8Array([0, 0, 0, 5, 0, 0, 0, 3, 0x66]),
      3,
      { statusCode: 400, message: 'Unknown frame type 0x66' },
    ],
    [
      'missing terminator',
      new Uint8Array([0, 0, 0, 8, 0, 0, 0, 4, 1, 0x61, 0x62, 0x63]),
      4,
      { message: 'Missing 0x00 terminator after the endpoint name' },
    ],
    [
      'invalid UTF-8 name',
      new Uint8Array([0, 0, 0, 7, 0, 0, 0, 5, 1, 0xc3, 0]),
      5,
      { message: 'endpoint name is not valid UTF-8' },
    ],
  ]
  for (const [name, bytes, id, body] of cases) {
    const c = await TcpClient.open(port)
    c.write(bytes)
    await c.closed
    t.equal(c.frames.length, 1, `${name}: one frame`)
    t.equal(c.frames[0]?.type, FrameType.ERROR, `${name}: ERROR`)
    t.equal(c.frames[0]?.requestId, id, `${name}: request id`)
    t.match(dec(c.frames[0]?.payload as Uint8Array), body, `${name}: body`)
  }
  // stalled partial frame
  const c = await TcpClient.open(port)
  c.write(new Uint8Array([0, 0, 0, 50, 0, 0]))
  const started = Date.now()
  await c.closed
  t.ok(Date.now() - started >= 100)
  t.match(dec(c.frames[0]?.payload as Uint8Array), { statusCode: 400, message: 'Incomplete frame timed out' })
})

t.test('payload and metadata text: short and long, valid and invalid UTF-8, as on WebSocket', async (t) => {
  const { app, port } = await buildApp()
  t.teardown(() => app.close())
  const c = await TcpClient.open(port)
  t.teardown(() => c.socket.destroy())
  // Short text (≤ 64 bytes) is decoded without TextDecoder, longer text with it: both sides of that line.
  const frame = (id: number, meta: Uint8Array, body: Uint8Array) => {
    const payload = new Uint8Array(meta.length + body.length)
    payload.set(meta)
    payload.set(body, meta.length)
    return encodeTcpFrame({ type: FrameType.REQUEST, requestId: id, endpoint: 'echo', payload })
  }
  const json = encodeMetadata({ format: 'json' })
  const text = (s: string) => new TextEncoder().encode(s)
  const long = 'x'.repeat(100)
  const invalid = (s: string, at: number) => {
    const b = text(s)
    b[at] = 0xff
    return b
  }
  c.write(frame(1, json, text('{"a":"b"}')))
  c.write(frame(2, json, text(`{"a":"${long}"}`)))
  c.write(frame(3, json, text('{"a":"é"}')))
  c.write(frame(4, json, invalid('{"a":"bc"}', 7)))
  c.write(frame(5, json, invalid(`{"a":"${long}"}`, 50)))
  c.write(frame(6, encodeMetadata({ format: 'json', note: long }), text('{}')))
  t.same(dec((await c.reply(1, FrameType.RESPONSE))?.payload as Uint8Array), { a: 'b' })
  t.same(dec((await c.reply(2, FrameType.RESPONSE))?.payload as Uint8Array), { a: long })
  t.same(dec((await c.reply(3, FrameType.RESPONSE))?.payload as Uint8Array), { a: 'é' })
  for (const id of [4, 5]) {
    const body = dec((await c.reply(id, FrameType.ERROR))?.payload as Uint8Array)
    t.same(
      [body.statusCode, body.code, body.error, body.message, body.requestId.endsWith(`:${id}`)],
      [400, 'TRV_VALIDATION', 'ValidationException', 'Payload is not valid UTF-8', true],
    )
  }
  t.same(dec((await c.reply(6, FrameType.RESPONSE))?.payload as Uint8Array), {})
})

t.test('one turn of answers in one buffer: growth, long and multibyte text, exact lengths', async (t) => {
  // The carrier writes the frames of a turn one after another into one buffer (2 KiB first, grown when
  // full) and a string straight into it: answers of every size and UTF-8 width must come out exact.
  const { app, port } = await buildApp()
  t.teardown(() => app.close())
  const c = await TcpClient.open(port)
  t.teardown(() => c.socket.destroy())
  const json = encodeMetadata({ format: 'json' })
  const text = (s: string) => new TextEncoder().encode(s)
  const frame = (id: number, body: string) => {
    const b = text(body)
    const payload = new Uint8Array(json.length + b.length)
    payload.set(json)
    payload.set(b, json.length)
    return encodeTcpFrame({ type: FrameType.REQUEST, requestId: id, endpoint: 'echo', payload })
  }
  const values = [
    'a',
    'é'.repeat(700), // 1400 bytes: the second answer no longer fits the first 2 KiB
    '€'.repeat(5000), // over 4096 characters: sized exactly, 15 000 bytes
    '😀'.repeat(1500), // surrogate pairs, 4 bytes each
    'z',
  ]
  // One write: every request is read in one turn, so every answer goes out in one buffer.
  const all = values.map((v, i) => frame(i + 1, JSON.stringify({ v })))
  c.write(Buffer.concat(all))
  for (const [i, v] of values.entries()) {
    const reply = await c.reply(i + 1, FrameType.RESPONSE)
    t.same(dec(reply?.payload as Uint8Array), { v }, `answer ${i + 1}`)
  }
  // The stream stays in sync afterwards.
  c.write(frame(9, '{"after":true}'))
  t.same(dec((await c.reply(9, FrameType.RESPONSE))?.payload as Uint8Array), { after: true })
})

t.test('a frame dribbled in one byte at a time still completes', async (t) => {
  // Its own server: under a loaded machine 30 one-byte writes can take longer than the 150 ms above.
  const { app, port } = await buildApp({ maxFrameBytes: 4096 })
  t.teardown(() => app.close())
  const d = await TcpClient.open(port)
  for (const b of requestFrame(1, 'echo', { ok: true })) {
    d.write(new Uint8Array([b]))
    await sleep(1)
  }
  t.same(dec((await d.reply(1))?.payload as Uint8Array), { ok: true })
  d.socket.end()
})

t.test('connection caps and idle timeout', async (t) => {
  const { app, port } = await buildApp({ maxConnectionsPerIp: 2, idleTimeoutMs: 200 })
  t.teardown(() => app.close())
  const a = await TcpClient.open(port)
  const b = await TcpClient.open(port)
  const c = await TcpClient.open(port)
  await c.closed
  t.ok(c.ended, 'third connection from one IP is closed')
  t.equal(app.triviumTcp.connections, 2)
  await a.closed
  await b.closed
  t.ok(a.ended && b.ended, 'idle connections closed')
  await until(() => app.triviumTcp.connections === 0, 'the server to count the closes')
  t.equal(app.triviumTcp.connections, 0)
})

t.test('push and closeSessions over TCP', async (t) => {
  const { app, port } = await buildApp()
  t.teardown(() => app.close())
  const c = await TcpClient.open(port)
  c.write(
    encodeTcpFrame({ type: FrameType.SUBSCRIBE, requestId: 1, topic: 'news', payload: new Uint8Array() }),
  )
  t.equal((await c.reply(1))?.type, FrameType.RESPONSE)
  await app.push.toTopic('news', { x: 1 })
  const p = await c.reply(0, FrameType.PUSH)
  t.equal(p?.topic, 'news')
  t.same(dec(p?.payload as Uint8Array), { x: 1 })
  c.write(requestFrame(2, 'whoami', undefined, { auth_token: 'u3' }))
  await c.reply(2)
  await app.push.toUser(3, 'inbox', 'hello')
  t.same(
    dec(
      (await c.until((fs) => fs.filter((f) => f.type === FrameType.PUSH).length === 2)).at(-1)
        ?.payload as Uint8Array,
    ),
    'hello',
  )
  t.equal(app.push.closeSessions('j3', 'Token has been revoked'), 1)
  await c.closed
  t.match(dec(c.frames.at(-1)?.payload as Uint8Array), {
    statusCode: 401,
    code: 'TRV_UNAUTHORIZED',
    message: 'Token has been revoked',
  })
})

t.test('shutdown: GOAWAY, drain, end streams with ERROR 503', async (t) => {
  const { app, port, probe } = await buildApp()
  const c = await TcpClient.open(port)
  c.write(requestFrame(1, 'slow', { ms: 150 }))
  c.write(requestFrame(2, 'count', { n: 1000, ms: 10 }))
  await c.until((fs) => fs.some((f) => f.requestId === 2))
  await app.close()
  await c.closed
  t.equal(c.frames.find((f) => f.type !== FrameType.STREAM_ITEM)?.type, FrameType.GOAWAY)
  t.equal(c.frames.find((f) => f.requestId === 1)?.type, FrameType.RESPONSE)
  const end = c.frames.find((f) => f.requestId === 2 && f.type !== FrameType.STREAM_ITEM)
  t.match(dec(end?.payload as Uint8Array), { statusCode: 503, message: 'Server is shutting down' })
  t.equal(probe.finallyRan, 1)
})
