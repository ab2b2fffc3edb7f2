// Issue 31: the TCP inject bridge and the WebSocket carrier run on the documented surface of Fastify,
// light-my-request, ws and Node only. Their sources must not name the private fields they once used.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'

const PRIVATE = [
  '_meta',
  '_lightMyRequest',
  '_socket',
  '_isServer',
  '_events',
  '_eventsCount',
  '_maxListeners',
]
const pattern = new RegExp(`(?<![\\w$])(${PRIVATE.join('|')})(?![\\w$])`, 'g')
const roots = ['../src', '../../websocket/src', '../../frame-session/src'].map(
  (dir) => new URL(dir, import.meta.url).pathname,
)

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** `file:line: name` for every use of a private field. */
export function privateUses(files: string[]): string[] {
  const found: string[] = []
  for (const file of files) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        for (const match of line.matchAll(pattern)) found.push(`${file}:${i + 1}: ${match[1]}`)
      })
  }
  return found
}

t.test(
  'packages/tcp/src, packages/websocket/src and packages/frame-session/src use no private field',
  async (t) => {
    const files = roots.flatMap(sources)
    t.ok(
      files.some((f) => f.endsWith('frame-session/src/route-bridge.ts')),
      'the route bridge (TCP inject, named routes) is scanned',
    )
    t.ok(
      files.some((f) => f.endsWith('websocket/src/carrier.ts')),
      'the WebSocket sources are scanned',
    )
    t.same(privateUses(files), [])
  },
)

t.test('the scan finds each private field, and not a longer public name', async (t) => {
  const { mkdtempSync, writeFileSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const dir = mkdtempSync(join(tmpdir(), 'private-fields-'))
  const file = join(dir, 'sample.ts')
  writeFileSync(
    file,
    [
      ...PRIVATE.map((name) => `x.${name} = 1`),
      'socket.writableNeedDrain; this.#socket; ws_socket; res._metadata',
    ].join('\n'),
  )
  t.same(
    privateUses([file]),
    PRIVATE.map((name, i) => `${file}:${i + 1}: ${name}`),
  )
})
