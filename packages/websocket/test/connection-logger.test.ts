// A connection's log lines (issue 42, bench/density): its logger is the upgrade request's
// `request.log.child({ connection })`, made at its first written line. The application's
// childLoggerFactory, which made `request.log`, still shapes every line.
import triviumCore from '@trivium/core'
import triviumWebSocket from '@trivium/websocket'
import { FrameType } from '@trivium/wire'
import Fastify from 'fastify'
import t from 'tap'
import { Client } from './helpers.js'

t.test("an application's childLoggerFactory applies to the connection's lines", async (t) => {
  const lines: Record<string, unknown>[] = []
  const app = Fastify({
    logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
  })
  const factoryBindings: unknown[] = []
  app.setChildLoggerFactory((logger, bindings, options, raw) => {
    factoryBindings.push(bindings)
    return logger.child({ ...bindings, fromFactory: raw.url?.split('?')[0] }, options)
  })
  await app.register(triviumCore)
  await app.register(triviumWebSocket)
  app.trivium.endpoint('hello', { method: 'POST', url: '/hello' }, (_body, call) => {
    call.log.debug('not written')
    call.log.warn({ said: 'hi' }, 'from the handler')
    return { ok: true }
  })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const client = await Client.open(`${address.replace('http', 'ws')}/ws?format=json`)
  t.teardown(() => client.ws.terminate())
  client.request(1, 'hello', {})
  t.equal((await client.reply(1))?.type, FrameType.RESPONSE)
  t.equal(factoryBindings.length, 1, 'the factory made the upgrade request’s logger, once')
  const line = lines.find((l) => l.msg === 'from the handler')
  t.match(line, {
    level: 40,
    reqId: (factoryBindings[0] as { reqId: string }).reqId,
    fromFactory: '/ws',
    connection: /^w[0-9a-z]+$/,
    said: 'hi',
  })
  t.notOk(
    lines.some((l) => l.msg === 'not written'),
    'a line below the level is not written',
  )
})
