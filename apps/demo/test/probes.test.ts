// Issue 33 item 7: liveness (`health`, on every transport) and readiness (`GET /health/ready`) are never
// rate limited, whatever RATE_LIMIT_DEFAULT says: a prober behind one address sends far more than a client.
import t from 'tap'
import { startDemo } from './helpers.js'
import { transportClients } from './transports.js'

t.test('liveness and readiness are never rate limited: 3 × the limit of probes all answer 200', async (t) => {
  const demo = await startDemo(t, { rateLimitDefault: { requests: 5, windowMs: 60_000 } })
  await demo.app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(demo.app.server.address() as { port: number }).port}`
  // The document says so too: no 429 among GET /health's answers.
  const health = (await demo.app.inject('/openapi.json')).json().paths['/health'].get
  t.equal(health['x-trivium-rate-limit'], false)
  t.notOk('429' in health.responses, 'GET /health documents no 429')
  for (const path of ['/health', '/health/ready']) {
    const statuses: number[] = []
    for (let i = 0; i < 15; i++) statuses.push((await fetch(`${base}${path}`)).status)
    t.same(statuses, Array(15).fill(200), `GET ${path} from one address`)
  }
  for (const { name, client } of await transportClients(t, demo, '')) {
    let ok = 0
    for (let i = 0; i < 15; i++) if ((await client.call('health', {})).status === 'ok') ok++
    t.equal(ok, 15, `${name}: health`)
  }
  // The limit itself is on: another public endpoint from the same address is refused after 5.
  const refresh: number[] = []
  for (let i = 0; i < 6; i++)
    refresh.push(
      (
        await fetch(`${base}/auth/refresh`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"refreshToken":"x"}',
        })
      ).status,
    )
  t.same(refresh, [401, 401, 401, 401, 401, 429])
})
