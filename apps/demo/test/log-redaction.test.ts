// Issue 16 item 9: a token in a URL never reaches the log. The demo runs as `pnpm start` does, logging at
// info (every request line); the test reads its stdout after calls that carry the access and refresh
// tokens in the query on HTTP, in the WebSocket upgrade URL, and as TCP metadata.
import { once } from 'node:events'
import { createClient } from '@trivium/client/node'
import t from 'tap'
import { endpoints } from '../dist/generated/endpoints.js'
import { api, registerAndLogin, startProcess, WebSocket } from './scale-helpers.js'

t.test('query-string secrets are redacted in every log line, on every transport', async (t) => {
  const server = await startProcess('logs', { LOG_LEVEL: 'info', TCP_MODE: 'inject' }, { timeoutMs: 90_000 })
  t.teardown(() => server.stop())
  const { tokens } = await registerAndLogin(server.base, 'logged')
  const secrets = [tokens.accessToken, tokens.refreshToken]
  const access = encodeURIComponent(tokens.accessToken)

  const me = await api(server.base, 'GET', `/auth/me?token=${access}`)
  t.equal(me.status, 200, 'the query token authenticates')
  await api(server.base, 'GET', `/auth/me?format=json&TOKEN=${access}&refresh_token=${tokens.refreshToken}`)
  await api(server.base, 'GET', `/no/such/route?token=${access}`)
  await api(server.base, 'GET', `/auth/me?token=${access}&token=${access}`)

  const ws = new WebSocket(`ws://127.0.0.1:${server.http}/ws?token=${access}&format=json`)
  await once(ws, 'open')
  ws.close()
  await once(ws, 'close')

  const tcp = createClient({
    transport: 'tcp',
    host: '127.0.0.1',
    port: server.tcp!,
    endpoints,
    token: tokens.accessToken,
  })
  t.match(await tcp.call('auth.me', {}), { username: 'logged' }, 'TCP (inject) call')
  await tcp.close()
  await new Promise((r) => setTimeout(r, 300)) // the last lines are flushed

  const lines = server
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { req?: { url?: string } })
  const urls = lines.flatMap((l) => (l.req?.url ? [l.req.url] : []))
  t.ok(urls.includes('/auth/me?token=[REDACTED]'), 'the HTTP request line, redacted')
  t.ok(
    urls.includes('/auth/me?format=json&TOKEN=[REDACTED]&refresh_token=[REDACTED]'),
    'any spelling; the refresh token too',
  )
  t.ok(urls.includes('/no/such/route?token=[REDACTED]'), 'a 404')
  t.ok(urls.includes('/ws?token=[REDACTED]&format=json'), 'the WebSocket upgrade')
  const output = server.output()
  for (const secret of secrets) {
    t.notOk(output.includes(secret), 'the token appears nowhere in the log')
    t.notOk(output.includes(secret.split('.')[2]!), 'not even its signature')
  }
})
