// The fault suite (issue 30): three demo instances on a PostgreSQL and a Redis of their own, continuous
// load on HTTP, WebSocket and TCP (tasks.create: every acknowledged task is checked in the database at the
// end), and one fault after the other:
//   revocation  logout on one instance, the token polled on the others (HTTP 401, WebSocket session
//               closed, SSE stream ended), FAULTS_ROUNDS rounds, before any fault;
//   redis-stall Redis frozen (SIGSTOP) for FAULTS_SECONDS, then SIGCONT;
//   partition   instance C's Redis connections held by a proxy (bytes held, nothing reset) for
//               FAULTS_SECONDS, then reset (the held bytes lost); a token revoked on A meanwhile, polled
//               on C, and its WebSocket session on C watched;
//   redis-empty Redis killed and restarted empty (no persistence); a token revoked before, polled after;
//   pg-restart  PostgreSQL fast shutdown and start (needs the server binaries; skipped without them);
//   kill-C      instance C SIGKILLed: what the survivors' clients see;
//   drain-B     instance B sent SIGTERM with calls and a stream of every transport in flight.
// It prints a table per phase and the figures of bench/faults/README.md; exits 1 when a figure that must
// hold does not (acknowledged writes lost, 5xx other than 503), 2 when the suite itself failed.
// Everything it starts is stopped at the end (also on Ctrl-C and after FAULTS_DEADLINE seconds).
// Run: `npx pnpm build` once, then `node bench/faults/run.mjs` (or `npx pnpm faults`).
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { HoldingProxy, Instance, Postgres, postgresBinDir, Redis, stopAll } from './processes.mjs'

const demoRequire = createRequire(new URL('../../apps/demo/package.json', import.meta.url))
const pg = demoRequire('pg')
const WebSocket = createRequire(demoRequire.resolve('@trivium/websocket'))('ws')
const { createClient } = await import(new URL('../../packages/client/dist/node.js', import.meta.url))
const { endpoints } = await import(new URL('../../apps/demo/dist/generated/endpoints.js', import.meta.url))

const SECONDS = Number(process.env.FAULTS_SECONDS ?? 3)
const ROUNDS = Number(process.env.FAULTS_ROUNDS ?? 10)
const PAUSE_MS = Number(process.env.FAULTS_PAUSE_MS ?? 20)
const SSE_ROUNDS = 5
const DEADLINE_S = Number(process.env.FAULTS_DEADLINE ?? 600)
const PASSWORD = 'Str0ng!Passw0rd'
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const now = () => performance.now()

// ---- tallies: phase → transport → instance → outcome counts -------------------------------------------
let phase = 'warm-up'
const phases = []
const tallies = new Map()
const examples = [] // the first few 5xx other than 503, with their message
function setPhase(name) {
  phase = name
  console.log(`${new Date().toISOString().slice(11, 19)} ${name}`)
  if (!phases.includes(name)) phases.push(name)
}
function record(at, transport, instance, outcome, detail) {
  const key = `${at}|${transport}|${instance}`
  const t = tallies.get(key) ?? {}
  t[outcome] = (t[outcome] ?? 0) + 1
  tallies.set(key, t)
  if (/^5\d\d$/.test(outcome) && outcome !== '503' && examples.length < 10)
    examples.push(`${at} ${transport} ${instance}: ${outcome} ${detail ?? ''}`.trim())
}
function sum(filter) {
  const out = {}
  for (const [key, t] of tallies) {
    const [p, transport, instance] = key.split('|')
    if (!filter(p, transport, instance)) continue
    for (const [k, v] of Object.entries(t)) out[k] = (out[k] ?? 0) + v
  }
  return out
}

// ---- HTTP -------------------------------------------------------------------------------------------
async function http(base, method, path, { token, body, timeoutMs = 10_000 } = {}) {
  const headers = {}
  if (token) headers.authorization = `Bearer ${token}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  })
  const text = await res.text()
  let json
  try {
    json = JSON.parse(text)
  } catch {}
  return { status: res.status, body: json ?? text }
}
async function statusOf(base, path, token) {
  try {
    return (await http(base, 'GET', path, { token })).status
  } catch {
    return 0
  }
}
async function login(base, username) {
  const res = await http(base, 'POST', '/auth/login', {
    body: { username, password: PASSWORD },
    timeoutMs: 60_000,
  })
  if (res.status !== 200) throw new Error(`login ${username}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.accessToken
}
/**
 * A new access token of the probe user without a login (bcrypt, seconds of CPU on a loaded machine): its
 * refresh token, exchanged; a logout with an empty body revokes the access token only.
 */
let probeRefresh
async function probeToken(base) {
  const res = await http(base, 'POST', '/auth/refresh', {
    body: { refreshToken: probeRefresh },
    timeoutMs: 60_000,
  })
  if (res.status !== 200) throw new Error(`refresh: ${res.status} ${JSON.stringify(res.body)}`)
  probeRefresh = res.body.refreshToken
  return res.body.accessToken
}
async function register(base, username) {
  const res = await http(base, 'POST', '/auth/register', {
    body: { username, email: `${username}@example.com`, password: PASSWORD },
    timeoutMs: 60_000,
  })
  if (res.status !== 201) throw new Error(`register ${username}: ${res.status} ${JSON.stringify(res.body)}`)
}
/** Polls until `fn` is true (every `everyMs`); the time it took, or undefined after `timeoutMs`. */
async function timeUntil(fn, timeoutMs, everyMs = 10, from = now()) {
  const end = from + timeoutMs
  while (now() < end) {
    if (await fn()) return now() - from
    await sleep(everyMs)
  }
  return undefined
}

// ---- load: one tasks.create loop per instance and transport --------------------------------------------
const acked = new Set()
const workers = []
function classify(err) {
  if (err?.code === 'TRV_NETWORK') return ['net', err.message]
  if (err?.code === 'TRV_TIMEOUT') return ['timeout', err.message]
  if (typeof err?.statusCode === 'number') return [String(err.statusCode), err.message]
  return ['net', err?.message]
}
async function startWorker(instance, transport, token) {
  const worker = { instance, transport, token, stopped: false, client: undefined }
  if (transport !== 'http') {
    worker.client = createClient({
      transport,
      ...instance.frameAddress(transport),
      endpoints,
      token,
      timeoutMs: 5000,
      reconnectAttempts: Number.POSITIVE_INFINITY,
      reconnectDelayMs: 100,
      reconnectMaxDelayMs: 1000,
    })
    worker.client.on('error', () => {})
    await worker.client.connect()
  }
  worker.done = (async () => {
    for (let n = 0; !worker.stopped; n++) {
      const at = phase
      const title = `${instance.name}-${transport}-${n}`
      try {
        if (transport === 'http') {
          const res = await http(instance.base, 'POST', '/tasks', { token, body: { title } })
          if (res.status === 201) {
            acked.add(res.body.id)
            record(at, transport, instance.name, 'ok')
          } else {
            // A 503 must be the documented error body (code TRV_SERVICE_UNAVAILABLE).
            const plain = res.status === 503 && res.body?.code !== 'TRV_SERVICE_UNAVAILABLE'
            record(at, transport, instance.name, plain ? '503-plain' : String(res.status), res.body?.message)
          }
        } else {
          const task = await worker.client.call('tasks.create', { title })
          acked.add(task.id)
          record(at, transport, instance.name, 'ok')
        }
      } catch (err) {
        const [outcome, detail] = transport === 'http' ? ['net', err.message] : classify(err)
        record(at, transport, instance.name, outcome, detail)
        await sleep(50) // a refused connection fails at once: do not spin
      }
      await sleep(PAUSE_MS)
    }
  })()
  workers.push(worker)
  return worker
}
async function stopWorkers(filter = () => true) {
  const stopping = workers.filter(filter)
  for (const w of stopping) w.stopped = true
  await Promise.all(stopping.map((w) => w.done))
  await Promise.all(stopping.map((w) => w.client?.close().catch(() => {})))
}

// ---- revocation probes --------------------------------------------------------------------------------
/** A WebSocket session authenticated at the upgrade; `closedAt` is set when the server closes it. */
async function openSession(instance, token) {
  const ws = new WebSocket(`ws://127.0.0.1:${instance.http}/ws?token=${encodeURIComponent(token)}`, {
    handshakeTimeout: 10_000,
  })
  const session = { ws, closedAt: undefined, code: undefined }
  ws.on('error', () => {})
  ws.on('close', (code) => {
    session.closedAt = now()
    session.code = code
  })
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('close', () => reject(new Error('WebSocket session refused')))
  })
  return session
}
/** A tasks.watch Server-Sent Events stream; `endedAt` is set when the response ends (`errorEvent` if with one). */
function openSse(instance, token) {
  const controller = new AbortController()
  const sse = { endedAt: undefined, errorEvent: undefined, events: 0, close: () => controller.abort() }
  sse.done = (async () => {
    try {
      const res = await fetch(`${instance.base}/tasks/watch`, {
        headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
        signal: controller.signal,
      })
      const decoder = new TextDecoder()
      for await (const chunk of res.body) {
        const text = decoder.decode(chunk, { stream: true })
        sse.events += (text.match(/^data:/gm) ?? []).length
        const error = /event: ?error\ndata: ?(.*)/.exec(text)
        if (error) sse.errorEvent = error[1]
      }
      sse.endedAt = now()
    } catch {
      if (!controller.signal.aborted) sse.endedAt = now()
    }
  })()
  return sse
}
const revocation = { http: [], ws: [], sseOpen: 0, sseTotal: 0, missed: 0 }
async function revocationRound(origin, others, withSse) {
  const token = await probeToken(origin.base)
  const sessions = await Promise.all(others.map((o) => openSession(o, token)))
  // SSE in the first rounds only: a stream that stays open costs the round its 2 s wait below.
  const streams = withSse ? others.map((o) => openSse(o, token)) : []
  // The load's events reach every stream (its headers only come with the first event).
  await timeUntil(async () => streams.every((s) => s.events > 0), 5000)
  const logout = await http(origin.base, 'POST', '/auth/logout', { token, body: {}, timeoutMs: 60_000 })
  if (logout.status !== 200) throw new Error(`logout: ${logout.status} ${JSON.stringify(logout.body)}`)
  const t0 = now()
  await Promise.all(
    others.map(async (o) => {
      // The window ends with the first poll *sent* after the logout answer that is refused.
      for (let sent = now(); sent - t0 < 5000; sent = now()) {
        if ((await statusOf(o.base, '/auth/me', token)) === 401) return revocation.http.push(sent - t0)
      }
      revocation.missed++
    }),
  )
  await timeUntil(async () => sessions.every((s) => s.closedAt !== undefined), 5000)
  for (const s of sessions) {
    if (s.closedAt === undefined) revocation.missed++
    else revocation.ws.push(Math.max(0, s.closedAt - t0))
    s.ws.terminate()
  }
  if (streams.length > 0)
    await timeUntil(async () => streams.every((s) => s.endedAt !== undefined), 2000, 20, t0)
  for (const s of streams) {
    revocation.sseTotal++
    if (s.endedAt === undefined) revocation.sseOpen++
    s.close()
  }
}

// ---- the run ------------------------------------------------------------------------------------------
const figures = {}
const instances = {}
let redis
let pgServer
let proxy
const tokens = {}

/** Time until every listed instance answers an authenticated call that needs `path`'s stores with 200. */
async function recovery(list, path, from) {
  const times = await Promise.all(
    list.map((i) =>
      timeUntil(async () => (await statusOf(i.base, path, tokens[i.name])) === 200, 60_000, 20, from),
    ),
  )
  return times.some((t) => t === undefined) ? undefined : Math.max(...times)
}

/** On a loaded machine a start-up can miss Fastify's 10 s plugin timeout: one more try, said so. */
async function startInstance(name, env) {
  try {
    return await Instance.start(name, env)
  } catch (err) {
    console.log(`instance ${name} failed to start, starting it again: ${String(err.message).split('\n')[0]}`)
    return Instance.start(name, env)
  }
}

async function main() {
  const bin = postgresBinDir()
  const id = randomBytes(4).toString('hex')
  let databaseUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
  const schema = bin ? 'faults' : `faults_${id}`
  if (bin) {
    pgServer = await Postgres.start(bin)
    databaseUrl = pgServer.url
  } else {
    console.log('no PostgreSQL server binaries: using TEST_DATABASE_URL (own schema), no restart fault')
  }
  redis = await Redis.start()
  proxy = await HoldingProxy.start(redis.port)
  const env = {
    DATABASE_URL: databaseUrl,
    DATABASE_SCHEMA: schema,
    REDIS_URL: redis.url,
    REDIS_PREFIX: `faults:${id}:`,
    SIGNING_SECRET: 'fault-suite-signing-secret-0123456789abcdef0123456789abcdef',
    ENCRYPTION_KEY: Buffer.alloc(32, 5).toString('base64'),
    HASH_SALT: 'fault-suite-hash-salt-0123456789abcdef',
    ADMIN_PASSWORD: 'Adm1n!Passw0rd',
    RATE_LIMIT_DEFAULT: 'off',
    ACCESS_LOG: 'false',
  }
  const started = now()
  // A first (it migrates), then B and C; C reaches Redis through the proxy (the partition fault).
  instances.A = await startInstance('A', env)
  ;[instances.B, instances.C] = await Promise.all([
    startInstance('B', env),
    startInstance('C', { ...env, REDIS_URL: proxy.url }),
  ])
  const all = () => Object.values(instances).filter((i) => i.running)
  console.log(
    `3 instances up in ${Math.round(now() - started)} ms (PostgreSQL ${bin ? 'own' : 'shared'}, Redis own)`,
  )

  await Promise.all(['a', 'b', 'c', 'probe'].map((name) => register(instances.A.base, `user_${name}`)))
  await Promise.all(
    all().map(async (i) => {
      tokens[i.name] = await login(i.base, `user_${i.name.toLowerCase()}`)
    }),
  )
  probeRefresh = (
    await http(instances.A.base, 'POST', '/auth/login', {
      body: { username: 'user_probe', password: PASSWORD },
      timeoutMs: 60_000,
    })
  ).body.refreshToken
  for (const i of all())
    for (const transport of ['http', 'websocket', 'tcp']) await startWorker(i, transport, tokens[i.name])

  setPhase('steady')
  await sleep(SECONDS * 1000)

  setPhase('revocation')
  for (let r = 0; r < ROUNDS; r++) {
    const list = all()
    const origin = list[r % list.length]
    const began = now()
    await revocationRound(
      origin,
      list.filter((i) => i !== origin),
      r < SSE_ROUNDS,
    )
    process.stdout.write(`  round ${r + 1}/${ROUNDS}: ${Math.round(now() - began)} ms\n`)
  }

  // Redis frozen: connections open, nothing answered.
  setPhase('redis-stall')
  redis.stall()
  await sleep(SECONDS * 1000)
  redis.resume()
  figures.stallRecovery = await recovery(all(), '/auth/me', now())

  // C partitioned from Redis (bytes held); a token revoked on A meanwhile.
  setPhase('partition')
  const partitionToken = await probeToken(instances.A.base)
  const partitionSession = await openSession(instances.C, partitionToken)
  proxy.hold()
  const held = now()
  await sleep(200)
  await http(instances.A.base, 'POST', '/auth/logout', { token: partitionToken, body: {} })
  const revokedAt = now()
  figures.partitionAccepted = await timeUntil(
    async () => (await statusOf(instances.C.base, '/auth/me', partitionToken)) !== 200,
    SECONDS * 1000,
    5,
    revokedAt,
  )
  await sleep(Math.max(0, SECONDS * 1000 - (now() - held)))
  // The partition ends with the connections reset and the held bytes lost: the revocation announced
  // meanwhile never reaches C's subscription, only C's resync can find it.
  proxy.release({ drop: true })
  const released = now()
  figures.partitionRecovery = await recovery([instances.C], '/auth/me', released)
  figures.partitionSessionClosed = await timeUntil(
    async () => partitionSession.closedAt !== undefined,
    5000,
    20,
    released,
  )
  partitionSession.ws.terminate()
  figures.partitionRevokedAfter = await statusOf(instances.C.base, '/auth/me', partitionToken)

  // Redis killed and started again, empty; a token revoked before.
  setPhase('redis-empty')
  const emptyToken = await probeToken(instances.A.base)
  await http(instances.A.base, 'POST', '/auth/logout', { token: emptyToken, body: {} })
  await redis.kill()
  await sleep(1000)
  await redis.start()
  figures.emptyRecovery = await recovery(all(), '/auth/me', now())
  figures.resurrected = []
  for (const i of all())
    if ((await statusOf(i.base, '/auth/me', emptyToken)) === 200) figures.resurrected.push(i.name)

  if (pgServer) {
    setPhase('pg-restart')
    await pgServer.stop()
    await sleep(1000)
    await pgServer.start()
    figures.pgRecovery = await recovery(all(), '/tasks?limit=1', now())
  }

  // C SIGKILLed: its clients stop; what do the survivors' clients see?
  setPhase('kill-C')
  const cWorkers = (w) => w.instance === instances.C
  const killed = stopWorkers(cWorkers) // their calls in flight fail with the process
  instances.C.signal('SIGKILL')
  await killed
  await sleep(SECONDS * 1000)

  // B drained (SIGTERM) with a call loop and a stream of every transport in flight.
  setPhase('drain-B')
  const B = instances.B
  const sse = openSse(B, tokens.B)
  const streamClients = ['websocket', 'tcp'].map((transport) =>
    createClient({
      transport,
      ...(transport === 'tcp' ? { host: '127.0.0.1', port: B.tcp } : { url: `ws://127.0.0.1:${B.http}/ws` }),
      endpoints,
      token: tokens.B,
      reconnectAttempts: 0,
    }),
  )
  const streamEnds = streamClients.map(async (client) => {
    client.on('error', () => {})
    try {
      for await (const _ of client.stream('tasks.watch', {})) {
        // events of B's own load
      }
      return 'ended'
    } catch (err) {
      return classify(err).join(' ')
    }
  })
  await timeUntil(async () => sse.events > 0, 5000)
  await sleep(200)
  const term = now()
  B.signal('SIGTERM')
  const exit = await Promise.race([B.exit, sleep(30_000).then(() => undefined)])
  figures.drain = exit ? { ms: exit.at - term, code: exit.code, signal: exit.signal } : { ms: undefined }
  await timeUntil(async () => sse.endedAt !== undefined, 2000, 20)
  figures.drainSse =
    sse.endedAt === undefined
      ? 'still open'
      : sse.errorEvent
        ? `error event ${sse.errorEvent}`
        : 'ended without an error event'
  figures.drainStreams = await Promise.all(
    streamEnds.map((p) => Promise.race([p, sleep(5000).then(() => 'still open')])),
  )
  sse.close()
  await Promise.all(streamClients.map((c) => c.close().catch(() => {})))

  setPhase('end')
  await stopWorkers()

  // Every acknowledged task is in the database.
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  const ids = [...acked]
  const found = await client.query(
    `SELECT count(*)::int AS n FROM "${schema}".demo_tasks WHERE id = ANY($1::int[])`,
    [ids],
  )
  figures.acked = ids.length
  figures.lost = ids.length - found.rows[0].n
  if (!bin) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await client.end()
}

function ms(v) {
  return v === undefined ? 'n/a' : `${Math.round(v)} ms`
}
function pct(values, p) {
  const s = [...values].sort((a, b) => a - b)
  return s.length === 0 ? undefined : s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]
}
function report() {
  const cols = ['ok', '401', '503', '503-plain', 'net', 'timeout']
  console.log(`\nphase        transport ${cols.map((c) => c.padStart(10)).join('')}  others`)
  for (const p of phases) {
    for (const transport of ['http', 'websocket', 'tcp']) {
      const t = sum((q, tr) => q === p && tr === transport)
      const other = Object.entries(t)
        .filter(([k]) => !cols.includes(k))
        .map(([k, v]) => `${k}:${v}`)
        .join(' ')
      const line = cols.map((c) => String(t[c] ?? 0).padStart(10)).join('')
      console.log(`${p.padEnd(12)} ${transport.padEnd(9)} ${line}  ${other}`)
    }
  }
  const fiveXX = sum(() => true)
  const bad5xx = Object.entries(fiveXX)
    .filter(([k]) => /^5\d\d/.test(k) && k !== '503')
    .reduce((n, [, v]) => n + v, 0)
  const survivors = sum((p, _t, i) => p === 'kill-C' && i !== 'C')
  const survivorErrors = Object.entries(survivors)
    .filter(([k]) => k !== 'ok')
    .reduce((n, [, v]) => n + v, 0)
  const lines = [
    `revocation window, HTTP on the other instances: p50 ${ms(pct(revocation.http, 50))}, p99 ${ms(pct(revocation.http, 99))}, max ${ms(pct(revocation.http, 100))} (${revocation.http.length} polls)`,
    `revocation window, WebSocket sessions on the other instances closed: p50 ${ms(pct(revocation.ws, 50))}, p99 ${ms(pct(revocation.ws, 99))} (${revocation.ws.length}; not refused/closed within 5 s: ${revocation.missed})`,
    `SSE streams of a revoked token still open 2 s after the logout: ${revocation.sseOpen} of ${revocation.sseTotal}`,
    `Redis stall ${SECONDS} s: every instance answers again ${ms(figures.stallRecovery)} after SIGCONT`,
    `partition ${SECONDS} s (C): a token revoked on A still accepted on C for ${figures.partitionAccepted === undefined ? `the whole partition (> ${SECONDS * 1000} ms)` : ms(figures.partitionAccepted)}; C answers again ${ms(figures.partitionRecovery)} after release; its WebSocket session of that token ${figures.partitionSessionClosed === undefined ? 'still open 5 s after release' : `closed ${ms(figures.partitionSessionClosed)} after release`}; the token after release: ${figures.partitionRevokedAfter}`,
    `Redis restarted empty: every instance answers again ${ms(figures.emptyRecovery)} after the start; a token revoked before is accepted again on ${figures.resurrected.length} of 3 instances`,
    pgServer
      ? `PostgreSQL restart: every instance serves the database again ${ms(figures.pgRecovery)} after it is back`
      : 'PostgreSQL restart: skipped (no server binaries)',
    `instance C SIGKILLed: calls of the survivors' clients that failed in the next ${SECONDS} s: ${survivorErrors}`,
    `drain of B (SIGTERM, calls and streams in flight): ${figures.drain.ms === undefined ? 'not exited after 30 s' : `exit ${figures.drain.code ?? figures.drain.signal} after ${ms(figures.drain.ms)}`}; SSE: ${figures.drainSse}; WebSocket/TCP streams: ${figures.drainStreams.join(', ')}`,
    `503 without the error body (HTTP): ${fiveXX['503-plain'] ?? 0}`,
    `acknowledged writes: ${figures.acked}, lost: ${figures.lost} (must be 0)`,
    `5xx other than 503: ${bad5xx} (must be 0)${examples.length ? `\n  ${examples.join('\n  ')}` : ''}`,
  ]
  for (const i of Object.values(instances)) {
    const errors = i.out
      .split('\n')
      .filter((l) => l.startsWith('{') && /"level":(50|60)/.test(l))
      .map((l) => {
        const e = JSON.parse(l)
        return `${e.msg}${e.err?.message ? `: ${e.err.message}` : ''}`
      })
    const counts = new Map()
    for (const e of errors) counts.set(e, (counts.get(e) ?? 0) + 1)
    const top = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 3)
    lines.push(
      `instance ${i.name}: ${errors.length} error log lines${top.map(([m, n]) => `\n  ${n}× ${m.slice(0, 160)}`).join('')}`,
    )
  }
  console.log(`\n${lines.join('\n')}`)
  return figures.lost === 0 && bad5xx === 0
}

let exitCode = 2
const deadline = setTimeout(() => {
  console.error(`fault suite: not done after ${DEADLINE_S} s; stopping everything`)
  void stopAll().then(() => process.exit(2))
}, DEADLINE_S * 1000)
process.once('SIGINT', () => void stopAll().then(() => process.exit(130)))
try {
  await main()
  exitCode = report() ? 0 : 1
} catch (err) {
  console.error('fault suite failed:', err)
  for (const i of Object.values(instances))
    if (i.out) console.error(`--- ${i.name} output (end) ---\n${i.out.slice(-3000)}`)
} finally {
  for (const w of workers) w.stopped = true
  await stopAll()
  clearTimeout(deadline)
}
process.exit(exitCode)
