// tasks.import (a client stream) and tasks.sync (a bidirectional stream) over HTTP/2 (PROTOCOL.md "Over
// HTTP/2"): the demo started with HTTP/2 over TLS (HTTP2=1) and h2c, called by @trivium/client/node with
// `http2`, in both formats; the tasks are stored and read back as over WebSocket and TCP.
import { createClient } from '@trivium/client/node'
import t from 'tap'
import { selfSigned } from '../../../scripts/test/self-signed.js'
import { createTypedClient, endpoints } from '../dist/generated/endpoints.js'
import { registerAndLogin, startDemo } from './helpers.js'

const certificate = selfSigned()
t.teardown(() => certificate.remove())

const lanes = [
  { lane: 'tls', http2: { key: certificate.key, cert: certificate.cert }, scheme: 'https' },
  { lane: 'h2c', http2: 'h2c' as const, scheme: 'http' },
]

for (const { lane, http2, scheme } of lanes) {
  t.test(`${lane}: tasks.import and tasks.sync over HTTP/2`, async (t) => {
    const demo = await startDemo(t, { http2 })
    const { app } = demo
    const alice = await registerAndLogin(app, 'alice')
    await app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.server.address() as { port: number }).port
    for (const format of ['json', 'binary'] as const) {
      const client = createClient({
        transport: 'http',
        url: `${scheme}://127.0.0.1:${port}`,
        endpoints,
        token: alice.tokens.accessToken,
        format,
        http2: { tls: { ca: certificate.cert } },
      })
      t.teardown(() => client.close())
      const typed = createTypedClient(client)
      const started = typed.tasks.import()
      const items = [{ title: `${lane} ${format} one`, tags: ['import'] }, { title: '   ' }]
      t.equal(await started.sendAll(items), true)
      const summary = (await started.response).toJSON() as {
        created: number
        failed: number
        taskIds: number[]
        errors: { index: number; message: string }[]
      }
      t.equal(summary.created, 1, `${format}: one created`)
      t.same(summary.errors, [{ index: 1, message: 'Invalid CreateTask: title must not be empty' }])
      const stored = await app.inject({
        method: 'GET',
        url: `/tasks/${summary.taskIds[0]}`,
        headers: { authorization: `Bearer ${alice.tokens.accessToken}` },
      })
      t.match(stored.json(), { title: `${lane} ${format} one`, ownerId: alice.user.id, tags: ['import'] })

      const sync = typed.tasks.sync()
      const changes = sync[Symbol.asyncIterator]()
      await sync.send({ ref: 1, id: summary.taskIds[0] as number, done: true })
      const confirmed = (await changes.next()).value?.toJSON() as Record<string, unknown>
      t.match(confirmed, {
        source: 'you',
        ref: 1,
        kind: 'updated',
        task: { id: summary.taskIds[0], done: true },
      })
      await sync.end()
      t.same(await changes.next(), { done: true, value: undefined }, 'the stream ends after the half-close')
    }
  })
}
