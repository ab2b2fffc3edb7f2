// `pnpm --filter @trivium/demo tour`: the quickest way to see the point of Trivium. Against a running
// demo (TOUR_URL, default http://127.0.0.1:3000; TOUR_TCP_PORT, default 4000) it registers a user,
// logs in, and makes the same typed calls over HTTP, WebSocket and TCP, printing what each returned.
import { randomBytes } from 'node:crypto'
import { createClient, type TriviumClient } from '@trivium/client/node'
import { createTypedClient, endpoints } from './generated/index.js'

const base = new URL(process.env.TOUR_URL ?? 'http://127.0.0.1:3000')
const tcpPort = Number(process.env.TOUR_TCP_PORT ?? 4000)
const wsUrl = `${base.protocol === 'https:' ? 'wss' : 'ws'}://${base.host}/ws`

function show(transport: string, what: string, value: unknown): void {
  const text = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))
  console.log(
    `  ${transport.padEnd(9)} ${what.padEnd(14)} → ${text.length > 110 ? `${text.slice(0, 107)}...` : text}`,
  )
}

async function main(): Promise<void> {
  const username = `tour_${randomBytes(3).toString('hex')}`
  const password = `Tour!${randomBytes(6).toString('hex')}A1`
  console.log(`Trivium tour against ${base.origin} (WebSocket ${wsUrl}, TCP port ${tcpPort})\n`)

  const http = createClient({ transport: 'http', url: base.origin, endpoints })
  const api = createTypedClient(http)
  const user = await api.auth.register({ username, email: `${username}@example.com`, password })
  show('http', 'auth.register', user)
  const tokens = await api.auth.login({ username, password })
  show('http', 'auth.login', {
    accessToken: `${tokens.accessToken.slice(0, 16)}…`,
    expiresIn: tokens.expiresIn,
  })
  http.setToken(tokens.accessToken)

  const wsClient = createClient({ transport: 'websocket', url: wsUrl, endpoints, token: tokens.accessToken })
  const tcpClient = createClient({
    transport: 'tcp',
    host: base.hostname,
    port: tcpPort,
    endpoints,
    token: tokens.accessToken,
  })
  const clients: [string, TriviumClient][] = [
    ['http', createClient({ transport: 'http', url: base.origin, endpoints, token: tokens.accessToken })],
    ['websocket', wsClient],
    ['tcp', tcpClient],
  ]
  try {
    for (const [name, client] of clients) {
      const typed = createTypedClient(client)
      console.log(`\n${name} (${client.transport}):`)
      show(name, 'auth.me', await typed.auth.me({}))
      const task = await typed.tasks.create({ title: `created over ${name}`, tags: ['tour', name] })
      show(name, 'tasks.create', { id: task.id, title: task.title, tags: task.tags })
      const page = await typed.tasks.list({ tag: 'tour', limit: 5 })
      show(
        name,
        'tasks.list',
        page.items.map((t) => t.title),
      )
      try {
        await typed.tasks.delete({ id: task.id })
      } catch (err) {
        show(name, 'tasks.delete', `${(err as Error).name}: ${(err as Error).message}`)
      }
    }
    // A stream: watch over WebSocket while TCP creates a task.
    const ws = createTypedClient(wsClient)
    const tcp = createTypedClient(tcpClient)
    const controller = new AbortController()
    const seen = (async () => {
      for await (const event of ws.tasks.watch({}, { signal: controller.signal })) {
        show('websocket', 'tasks.watch', { kind: event.kind, title: event.task.title })
        controller.abort()
      }
    })().catch(() => {})
    await new Promise((r) => setTimeout(r, 200))
    await tcp.tasks.create({ title: 'seen live by the WebSocket stream' })
    await seen

    // A client stream: the tasks of an import go out one by one (each send waits for the server's
    // credit), the server answers one summary. Blank titles are refused and listed, the rest created.
    console.log('\nstreams of requests (WebSocket and TCP):')
    const started = tcp.tasks.import()
    await started.sendAll([
      { title: 'imported 1', tags: ['tour'] },
      { title: '   ' },
      { title: 'imported 2', tags: ['tour'] },
    ])
    const summary = await started.response
    show('tcp', 'tasks.import', summary.toJSON())

    // A bidirectional stream: edits in, each confirmed; meanwhile a change made over TCP comes out too.
    const sync = ws.tasks.sync()
    const changes = sync[Symbol.asyncIterator]()
    const [first, second] = summary.taskIds
    await sync.send({ ref: 1, id: first as number, done: true })
    const confirmed = (await changes.next()).value
    show('websocket', 'tasks.sync', {
      source: confirmed?.source,
      ref: confirmed?.ref,
      done: confirmed?.task?.done,
    })
    await tcp.tasks.update({ id: second as number, title: 'renamed over TCP' })
    const other = (await changes.next()).value
    show('websocket', 'tasks.sync', { source: other?.source, kind: other?.kind, title: other?.task?.title })
    await sync.end()
  } finally {
    for (const [, client] of clients) await client.close()
    await http.close()
  }
  console.log('\nThe same handlers, the same models and the same errors on all three transports.')
}

main().catch((err) => {
  console.error(`tour failed: ${(err as Error).name}: ${(err as Error).message}`)
  process.exitCode = 1
})
