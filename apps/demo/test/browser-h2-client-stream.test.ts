// A browser's client stream over HTTP/2 in real Chromium (PROTOCOL.md "Over HTTP", "Browsers"; client README
// "Over HTTP/2"): `fetch` with a ReadableStream body of envelopes and `duplex: 'half'`, over h2 with TLS (a
// self-signed certificate the browser context is told to accept), answered as a unary call.
import triviumCore, { triviumHttp2Options } from '@trivium/core'
import Fastify, { type FastifyInstance } from 'fastify'
import t from 'tap'
import { selfSigned } from '../../../scripts/test/self-signed.js'
import { registerTickStreams } from '../../../scripts/test/tick-streams.js'
import { launchChromium, skipBrowser } from './chromium.js'

t.test(
  'Chromium sends a client stream over HTTP/2 with fetch duplex: half',
  { skip: skipBrowser },
  async (t) => {
    const certificate = selfSigned()
    t.teardown(() => certificate.remove())
    const app = Fastify(
      triviumHttp2Options({ key: certificate.key, cert: certificate.cert }),
    ) as unknown as FastifyInstance
    await app.register(triviumCore)
    registerTickStreams(app)
    app.get('/', async (_request, reply) =>
      reply.type('text/html; charset=utf-8').send('<!doctype html><title>h2</title>'),
    )
    await app.listen({ port: 0, host: '127.0.0.1' })
    t.teardown(() => app.close())
    const origin = `https://127.0.0.1:${(app.server.address() as { port: number }).port}`

    const browser = await launchChromium(t)
    const context = await browser.newContext({ ignoreHTTPSErrors: true })
    const page = await context.newPage()
    await page.goto(`${origin}/`)
    // A string, not a function: tsx would put its `__name` helper, unknown to the page, into a function's source.
    const answer = (await page.evaluate(`(async () => {
    const envelope = (value) => {
      const bytes = new TextEncoder().encode(JSON.stringify(value))
      const out = new Uint8Array(5 + bytes.length)
      new DataView(out.buffer).setUint32(1, bytes.length)
      out.set(bytes, 5)
      return out
    }
    const ticks = [1, 2, 39]
    // One envelope per pull: the body is sent as it is produced.
    const body = new ReadableStream({
      pull(controller) {
        const i = ticks.shift()
        if (i === undefined) controller.close()
        else controller.enqueue(envelope({ i }))
      },
    })
    const res = await fetch('/sum', {
      method: 'POST',
      headers: { 'content-type': 'application/trivium-stream+json' },
      body,
      duplex: 'half',
    })
    const timing = performance.getEntriesByType('resource').at(-1)
    return { status: res.status, body: await res.json(), protocol: timing && timing.nextHopProtocol }
  })()`)) as { status: number; body: unknown; protocol: string | undefined }
    t.equal(answer.status, 200)
    t.same(answer.body, { sum: 42, count: 3 })
    t.equal(answer.protocol, 'h2', 'over HTTP/2')
  },
)
