// Registration is atomic (user + member role in one transaction); a reused refresh token (theft) closes
// the user's open WebSocket and TCP sessions; a TCP session closes when its token expires.
import { once } from 'node:events'
import http from 'node:http'
import net from 'node:net'
import { NotFoundException } from '@trivium/core'
import { REPEATED_CREDENTIAL } from '@trivium/core/internal'
import { RbacService } from '@trivium/rbac'
import { encodeMetadata, encodeTcpFrame, encodeWsFrame, FrameType, TcpFrameReader } from '@trivium/wire'
import t, { type Test } from 'tap'
import { ADMIN, BACKENDS, backendConfig, startDemo } from './helpers.js'
import { WebSocket, type WsClient } from './scale-helpers.js'

const REVOKED = 'Token has been revoked'
const PASSWORD = 'Str0ng!Passw0rd'
const EMPTY_JSON = Buffer.from('{}')
const decoder = new TextDecoder()

type Demo = Awaited<ReturnType<typeof startDemo>>
const body = (username: string) => ({ username, email: `${username}@example.com`, password: PASSWORD })

// register and login allow 5 calls a minute per client: each test user comes from its own address
let clients = 0
const nextAddress = () => `10.9.${Math.floor(++clients / 250)}.${clients % 250}`

function register(app: Demo['app'], username: string, remoteAddress = nextAddress()) {
  return app.inject({ method: 'POST', url: '/auth/register', payload: body(username), remoteAddress })
}

async function registerAndLogin(app: Demo['app'], username: string) {
  const remoteAddress = nextAddress()
  const reg = await register(app, username, remoteAddress)
  if (reg.statusCode !== 201) throw new Error(`register failed: ${reg.body}`)
  const login = await app.inject({
    method: 'POST',
    url: '/auth/login',
    payload: { username, password: PASSWORD },
    remoteAddress,
  })
  if (login.statusCode !== 200) throw new Error(`login failed: ${login.body}`)
  return {
    user: reg.json(),
    tokens: login.json() as { accessToken: string; refreshToken: string; expiresIn: number },
  }
}

async function usersNamed(demo: Demo, username: string): Promise<number> {
  const { rows } = await demo.sql.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM auth_users WHERE username = $1',
    [username],
  )
  return rows[0]!.n
}

/** A WebSocket (format=json, token in the query) whose first call, auth.me, has answered. */
async function openWs(port: number, token: string, username: string, t: Test): Promise<WsClient> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?token=${token}&format=json`)
  await once(ws, 'open')
  const reply = once(ws, 'message') as Promise<[Buffer]>
  ws.send(encodeWsFrame({ type: FrameType.REQUEST, requestId: 1, endpoint: 'auth.me', payload: EMPTY_JSON }))
  const [data] = await reply
  t.equal(data[0], FrameType.RESPONSE, 'the WebSocket session works')
  t.match(JSON.parse(decoder.decode(data.subarray(5))), { username })
  return ws
}

/** A TCP connection and the frames it received. */
async function openTcp(port: number) {
  const socket = net.connect(port, '127.0.0.1')
  await once(socket, 'connect')
  const reader = new TcpFrameReader()
  const frames: { type: number; requestId: number; body: string }[] = []
  socket.on('data', (chunk) => {
    for (const f of reader.push(chunk))
      frames.push({ type: f.type, requestId: f.requestId, body: decoder.decode(f.payload) })
  })
  const closed = once(socket, 'close').then(() => Date.now())
  const timer = setTimeout(() => socket.destroy(), 8000)
  closed.then(() => clearTimeout(timer))
  const call = async (requestId: number, endpoint: string, token: string) => {
    socket.write(
      encodeTcpFrame({
        type: FrameType.REQUEST,
        requestId,
        endpoint,
        payload: Buffer.concat([encodeMetadata({ auth_token: token, format: 'json' }), EMPTY_JSON]),
      }),
    )
    for (let i = 0; i < 250 && !frames.some((f) => f.requestId === requestId); i++)
      await new Promise((r) => setTimeout(r, 20))
    return frames.find((f) => f.requestId === requestId)
  }
  return { socket, frames, closed, call }
}

for (const backend of BACKENDS)
  t.test(`auth and sessions (${backend})`, async (t) => {
    const demo = await startDemo(t, backendConfig(backend))
    const { app } = demo
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as { port: number }
    const tcpPort = app.triviumTcp.address()?.port as number

    await t.test('register: a failed role assignment leaves no user behind', async (t) => {
      // A database failure between the user row and the role row (a trigger refusing the role)
      await demo.sql.exec(`
        CREATE FUNCTION test_refuse_role() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF (SELECT username FROM auth_users WHERE id = NEW.user_id) = 'doomed' THEN
            RAISE EXCEPTION 'role assignment refused';
          END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER test_refuse_role BEFORE INSERT ON user_roles
          FOR EACH ROW EXECUTE FUNCTION test_refuse_role();`)
      const failed = await register(app, 'doomed')
      t.equal(failed.statusCode, 500)
      t.equal(await usersNamed(demo, 'doomed'), 0, 'the user row was rolled back with the role')
      await demo.sql.exec('DROP TRIGGER test_refuse_role ON user_roles; DROP FUNCTION test_refuse_role();')

      const { user, tokens } = await registerAndLogin(app, 'doomed')
      t.same(user, { id: user.id, username: 'doomed', email: 'doomed@example.com', roles: ['member'] })
      const me = await app.inject({
        url: '/auth/me',
        headers: { authorization: `Bearer ${tokens.accessToken}` },
      })
      t.same(me.json().roles, ['member'])

      // The flows' per-call hook with an unknown role id: NotFoundException, no user, name still free.
      const flows = app.authFlows
      if (flows === undefined) throw new Error('the demo registers the flows: authFlows is decorated')
      await t.rejects(
        flows.register(body('nobody'), {
          onRegistered: (created, tx) => new RbacService(tx).assignRole(created.id, 987654),
        }),
        NotFoundException,
      )
      t.equal(await usersNamed(demo, 'nobody'), 0)
      const again = await register(app, 'nobody')
      t.equal(again.statusCode, 201)
      t.same(again.json().roles, ['member'])
    })

    await t.test('a reused refresh token closes the open sessions of its user', async (t) => {
      const victim = await registerAndLogin(app, 'victim')
      const bystander = await registerAndLogin(app, 'bystander')
      const ws = await openWs(port, victim.tokens.accessToken, 'victim', t)
      const other = await openWs(port, bystander.tokens.accessToken, 'bystander', t)
      const tcp = await openTcp(tcpPort)
      t.equal((await tcp.call(1, 'auth.me', victim.tokens.accessToken))?.type, FrameType.RESPONSE)
      const wsClosed = once(ws, 'close') as Promise<[number, Buffer]>
      const wsTimer = setTimeout(() => ws.terminate(), 5000)

      const refresh = (refreshToken: string) =>
        app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken } })
      const rotated = await refresh(victim.tokens.refreshToken)
      t.equal(rotated.statusCode, 200, 'a first exchange is a rotation')
      const reused = await refresh(victim.tokens.refreshToken)
      t.equal(reused.statusCode, 401)
      t.equal(reused.json().message, REVOKED)

      const [code, reason] = await wsClosed
      clearTimeout(wsTimer)
      t.equal(code, 4001)
      t.equal(reason.toString(), REVOKED)
      await tcp.closed
      const error = tcp.frames.find((f) => f.type === FrameType.ERROR)
      t.equal(error?.requestId, 0)
      t.match(JSON.parse(error?.body ?? '{}'), {
        statusCode: 401,
        code: 'TRV_UNAUTHORIZED',
        error: 'UnauthorizedException',
        message: REVOKED,
      })

      // another user's session is untouched
      const reply = once(other, 'message') as Promise<[Buffer]>
      other.send(
        encodeWsFrame({ type: FrameType.REQUEST, requestId: 2, endpoint: 'auth.me', payload: EMPTY_JSON }),
      )
      t.equal((await reply)[0][0], FrameType.RESPONSE, "the bystander's WebSocket is still open")
      other.close()
    })

    await t.test(
      'a repeated token is refused with one message over HTTP and the WebSocket upgrade',
      async (t) => {
        const { tokens } = await registerAndLogin(app, 'twice')
        const query = `token=${tokens.accessToken}&token=${tokens.accessToken}`
        const viaHttp = await app.inject({ url: `/auth/me?${query}` })
        t.equal(viaHttp.statusCode, 401)
        t.equal(viaHttp.json().message, REPEATED_CREDENTIAL)
        // A raw upgrade request: the refusal is an HTTP answer with the error body, before any socket.
        const request = http.get(`http://127.0.0.1:${port}/ws?${query}&format=json`, {
          headers: {
            connection: 'Upgrade',
            upgrade: 'websocket',
            'sec-websocket-version': '13',
            'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
          },
        })
        const [response] = (await once(request, 'response')) as [http.IncomingMessage]
        let text = ''
        for await (const chunk of response) text += chunk
        t.equal(response.statusCode, 401)
        t.match(JSON.parse(text), {
          statusCode: 401,
          error: 'UnauthorizedException',
          message: REPEATED_CREDENTIAL,
        })
      },
    )

    await t.test('assigning or revoking a role for a user that does not exist is a 404', async (t) => {
      const login = await app.inject({
        method: 'POST',
        url: '/auth/login',
        payload: ADMIN,
        remoteAddress: nextAddress(),
      })
      const headers = { authorization: `Bearer ${login.json().accessToken}` }
      for (const url of ['/admin/roles/assign', '/admin/roles/revoke']) {
        const r = await app.inject({ method: 'POST', url, headers, payload: { userId: 999999, roleId: 1 } })
        t.equal(r.statusCode, 404, url)
        t.match(r.json(), { error: 'NotFoundException', message: 'User 999999 not found' })
      }
      const stored = await demo.sql.query('SELECT 1 FROM user_roles WHERE user_id = 999999')
      t.equal(stored.rows.length, 0, 'nothing stored')
    })

    await t.test('a TCP session closes when its token expires', async (t) => {
      const { user } = await registerAndLogin(app, 'brief')
      const token = await app.triviumAuth.issueAccessToken(
        { id: user.id, username: 'brief', email: 'brief@example.com' },
        { ttlSeconds: 2 },
      )
      const exp = (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { exp: number })
        .exp
      const tcp = await openTcp(tcpPort)
      const me = await tcp.call(1, 'auth.me', token)
      t.equal(me?.type, FrameType.RESPONSE)
      t.match(JSON.parse(me?.body ?? '{}'), { username: 'brief' })
      const at = await tcp.closed
      t.ok(at >= exp * 1000, `closed at or after exp (${at - exp * 1000} ms after)`)
      t.ok(at < exp * 1000 + 1000, 'within a second of exp')
      t.same(
        tcp.frames.map((f) => [f.type, f.requestId]),
        [
          [FrameType.RESPONSE, 1],
          [FrameType.ERROR, 0],
        ],
      )
      t.match(JSON.parse(tcp.frames[1]?.body ?? '{}'), {
        statusCode: 401,
        code: 'TRV_TOKEN_EXPIRED',
        error: 'TokenExpiredException',
        message: 'Token has expired',
      })
    })
  })
