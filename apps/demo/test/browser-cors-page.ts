// The script of browser-cors.test.ts's page (bundled with esbuild for the browser, served from the page's
// own origin): what the page does with @trivium/client against the demo on another origin.
import { createClient, NetworkException } from '@trivium/client'
import { endpoints } from '../src/generated/index.js'

type Task = { id: number; title: string }

async function login(base: string, password: string): Promise<string> {
  const anonymous = createClient({ transport: 'http', url: base, endpoints })
  const pair = await anonymous.call('auth.login', { username: 'crossorigin', password })
  return pair.accessToken
}

async function failure(call: Promise<unknown>): Promise<{ network: boolean; message: string }> {
  const err = await call.then(
    () => new Error('it succeeded'),
    (e: unknown) => e as Error,
  )
  return { network: err instanceof NetworkException, message: err.message }
}

/** The demo with the spec's default CORS: default options, then a deadline and a key set by the page. */
async function withDefaultCors(base: string, password: string) {
  const token = await login(base, password)
  const client = createClient({ transport: 'http', url: base, endpoints, token })
  const created = (await client.call('tasks.create', { title: 'from another origin' })) as Task
  const page = (await client.call('tasks.list', {})) as { items: Task[] }
  const deadline = await failure(client.call('tasks.list', {}, { timeoutMs: 5000 }))
  const key = await failure(
    client.call('tasks.create', { title: 'with a key' }, { idempotencyKey: 'page-key-1' }),
  )
  const raw = await fetch(`${base}/tasks`, { headers: { authorization: `Bearer ${token}` } })
  return {
    created: created.title,
    listed: page.items.map((task) => task.title),
    deadline,
    key,
    status: raw.status,
    rateLimitHeaderSeen: raw.headers.get('x-ratelimit-limit'),
    token,
  }
}

/** The demo allowing Trivium-Timeout-Ms and Idempotency-Key, exposing the replay and rate-limit headers. */
async function withHeadersAllowed(base: string, password: string) {
  const token = await login(base, password)
  const timed = createClient({ transport: 'http', url: base, endpoints, token, timeoutMs: 10_000 })
  const listed = (await timed.call('tasks.list', {})) as { items: Task[] }
  const client = createClient({ transport: 'http', url: base, endpoints, token, retries: 1 })
  const perCall = (await client.call('tasks.list', {}, { timeoutMs: 5000 })) as { items: Task[] }
  const first = (await client.call(
    'tasks.create',
    { title: 'once' },
    { idempotencyKey: 'page-key-2' },
  )) as Task
  const again = (await client.call(
    'tasks.create',
    { title: 'once' },
    { idempotencyKey: 'page-key-2' },
  )) as Task
  const generated = (await client.call('tasks.create', { title: 'retry-safe' })) as Task
  // The deadline header reaches the server: a bad value is answered with its 400, read by the page.
  const badDeadline = await fetch(`${base}/tasks`, {
    headers: { authorization: `Bearer ${token}`, 'trivium-timeout-ms': '0' },
  })
  const post = () =>
    fetch(`${base}/tasks`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'idempotency-key': 'page-key-3',
      },
      body: JSON.stringify({ title: 'replayed' }),
    })
  const one = await post()
  const two = await post()
  const after = (await client.call('tasks.list', {})) as { items: Task[] }
  return {
    listed: [listed.items.length, perCall.items.length],
    sameTask: first.id === again.id,
    generated: generated.title,
    badDeadline: { status: badDeadline.status, body: await badDeadline.json() },
    replay: [one.headers.get('idempotent-replayed'), two.headers.get('idempotent-replayed')],
    sameBody: ((await one.json()) as Task).id === ((await two.json()) as Task).id,
    rateLimit: [two.headers.get('x-ratelimit-limit'), two.headers.get('x-ratelimit-remaining')],
    titles: after.items.map((task) => task.title).sort(),
  }
}

const corsPage = { withDefaultCors, withHeadersAllowed }
export type PageApi = typeof corsPage
Object.assign(globalThis, { corsPage })
