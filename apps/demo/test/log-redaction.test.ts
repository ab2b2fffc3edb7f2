// Issue 16 item 9: a token in a URL never reaches the log. The demo runs as `pnpm start` does, logging at
// info (every request line); the test reads its stdout after calls that carry the access and refresh
// tokens in the query on HTTP, in the WebSocket upgrade URL, and as TCP metadata.
import { once } from 'node:events'
import { createClient } from '@trivium/client/node'
import t from 'tap'
import { endpoints } from '../dist/generated/endpoints.js'
import { api, registerAndLogin, startOnPostgres, until, WebSocket } from './scale-helpers.js'

t.test('query-string secrets are redacted in every log line, on every transport', async (t) => {
  const server = await startOnPostgres(t, 'logs', { LOG_LEVEL: 'info', TCP_MODE: 'inject' })
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
  const urlsLogged = () =>
    server
      .output()
      .split('\n')
      .slice(0, -1) // complete lines only: the last may be half written
      .filter((l) => l.startsWith('{'))
      .flatMap((l) => (JSON.parse(l) as { req?: { url?: string } }).req?.url ?? [])
  const tcpCallLogged = () =>
    server
      .output()
      .split('\n')
      .slice(0, -1)
      .filter((l) => l.startsWith('{'))
      .some((l) => {
        const line = JSON.parse(l) as { endpoint?: string; transport?: string }
        return line.endpoint === 'auth.me' && line.transport === 'tcp'
      })
  // The child's stdout arrives when it arrives: wait for the upgrade's line and the TCP call's access-log
  // line (written once the last call ended, after every earlier line: a leaked token in the TCP call's
  // lines must be seen).
  await until(
    async () => urlsLogged().includes('/ws?token=[REDACTED]&format=json') && tcpCallLogged(),
    30_000,
  )
  t.ok(tcpCallLogged(), "the TCP call's access-log line (the last call's lines are in)")
  const urls = urlsLogged()
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
