// Issue 41: client and bidirectional streams whose item model validates asynchronously (a Standard
// Schema: Zod 4 with an async refine, and a hand-written one), over WebSocket, TCP and HTTP/2. Each item
// is settled before the handler reads it; an item the async check refuses ends the call with the
// ValidationException of that item (its field and message), and the connection serves on.
import { createClient, type TriviumClient } from '@trivium/client/node'
import triviumCore, { type StandardSchemaV1, triviumHttp2Options } from '@trivium/core'
import triviumTcp from '@trivium/tcp'
import triviumWebSocket from '@trivium/websocket'
import Fastify, { type FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { z } from 'zod'
import { requestStreamSpec } from './fixture.js'

const settle = () => new Promise((resolve) => setImmediate(resolve))

/** Zod 4: an item whose `i` may not be 13, checked by an async refine (as a lookup would). */
const LuckyItem = z
  .object({ i: z.number().int() })
  .refine(
    async (v) => {
      await settle()
      return v.i !== 13
    },
    { message: 'is unlucky', path: ['i'] },
  )
  .meta({ title: 'LuckyItem' })

type Word = { word: string }
/** Hand-written Standard Schema v1 with an async check: refuses the word `stop`. */
const AsyncWord: StandardSchemaV1<Word, Word> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    async validate(value) {
      await settle()
      const v = value as Record<string, unknown>
      if (typeof v?.word !== 'string') return { issues: [{ message: 'must be string', path: ['word'] }] }
      if (v.word === 'stop') return { issues: [{ message: 'is not allowed', path: ['word'] }] }
      return { value: { word: v.word } }
    },
  },
}

const spec = requestStreamSpec

function endpoints(app: FastifyInstance): void {
  app.trivium.clientStream(
    'lucky.sum',
    { method: 'POST', url: '/lucky.sum', request: LuckyItem },
    async (items) => {
      let sum = 0
      for await (const item of items) sum += (item as { i: number }).i
      return { sum }
    },
  )
  app.trivium.bidiStream(
    'words.shout',
    { method: 'POST', url: '/words.shout', request: AsyncWord },
    async function* (words) {
      for await (const w of words) yield { word: (w as Word).word.toUpperCase() }
    },
  )
}

async function frameApp(t: Test) {
  const app = Fastify({ logger: false })
  await app.register(triviumCore)
  await app.register(triviumWebSocket)
  await app.register(triviumTcp, { port: 0 })
  endpoints(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return {
    port: (app.server.address() as { port: number }).port,
    tcpPort: app.triviumTcp.address()?.port as number,
  }
}

async function h2App(t: Test) {
  const app = Fastify(triviumHttp2Options('h2c')) as unknown as FastifyInstance
  await app.register(triviumCore)
  endpoints(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return (app.server.address() as { port: number }).port
}

async function clientOf(t: Test, lane: 'websocket' | 'tcp' | 'http2'): Promise<TriviumClient> {
  const common = { format: 'json' as const, reconnectAttempts: 0 }
  let client: TriviumClient
  if (lane === 'http2') {
    client = createClient({
      ...common,
      transport: 'http',
      url: `http://127.0.0.1:${await h2App(t)}`,
      http2: true,
    })
  } else {
    const { port, tcpPort } = await frameApp(t)
    client =
      lane === 'tcp'
        ? createClient({ ...common, transport: 'tcp', host: '127.0.0.1', port: tcpPort })
        : createClient({ ...common, transport: 'websocket', url: `ws://127.0.0.1:${port}/ws` })
  }
  t.teardown(() => client.close())
  return client
}

for (const lane of ['websocket', 'tcp', 'http2'] as const) {
  t.test(`${lane}: items settle through the async model before the handler reads them`, async (t) => {
    const client = await clientOf(t, lane)
    const sum = client.clientStream(spec('lucky.sum', false))
    await sum.sendAll([{ i: 1 }, { i: 2 }, { i: 39 }])
    t.same(await sum.response, { sum: 42 })

    const shout = client.bidiStream(spec('words.shout', true))
    const seen: unknown[] = []
    const reading = (async () => {
      for await (const item of shout) seen.push(item)
    })()
    await shout.sendAll([{ word: 'hi' }, { word: 'there' }])
    await reading
    t.same(seen, [{ word: 'HI' }, { word: 'THERE' }])
  })

  t.test(`${lane}: an item the async check refuses ends the call with its ValidationException`, async (t) => {
    const client = await clientOf(t, lane)
    const unlucky = client.clientStream(spec('lucky.sum', false))
    unlucky.sendAll([{ i: 1 }, { i: 13 }, { i: 2 }]).catch(() => {})
    const refused = await unlucky.response.then(
      () => undefined,
      (err: unknown) => err,
    )
    t.match(refused, {
      name: 'ValidationException',
      statusCode: 400,
      code: 'TRV_VALIDATION',
      message: 'Invalid LuckyItem: i is unlucky',
      details: [{ field: 'i', message: 'is unlucky' }],
    })

    const shout = client.bidiStream(spec('words.shout', true))
    const seen: unknown[] = []
    const reading = (async () => {
      for await (const item of shout) seen.push(item)
    })().then(
      () => undefined,
      (err: unknown) => err,
    )
    shout.sendAll([{ word: 'go' }, { word: 'stop' }, { word: 'more' }]).catch(() => {})
    t.match(await reading, {
      name: 'ValidationException',
      code: 'TRV_VALIDATION',
      message: /word is not allowed$/,
      details: [{ field: 'word', message: 'is not allowed' }],
    })
    t.same(seen, [{ word: 'GO' }], 'the items before the refused one were answered')

    // The connection serves on.
    const again = client.clientStream(spec('lucky.sum', false))
    await again.sendAll([{ i: 5 }])
    t.same(await again.response, { sum: 5 })
  })
}
