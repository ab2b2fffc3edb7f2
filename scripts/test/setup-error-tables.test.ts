// Issue 43 item 4: each package's setup refusals come from one table (src/setup-errors.ts), and its README's
// "Setup errors" table lists exactly those codes, plus the shared TRV_SETUP_* codes it raises through core's
// helpers. (core and protections check their own tables in their tests.)
import { readFileSync } from 'node:fs'
import t from 'tap'

/** Each package with its table, and the shared codes its README lists besides. */
const PACKAGES: Record<string, readonly string[]> = {
  sql: [],
  'redis-bus': [],
  validation: ['TRV_SETUP_UNKNOWN_OPTION'],
  'frame-session': ['TRV_SETUP_SHUTDOWN_GRACE', 'TRV_SETUP_SHUTDOWN_GRACE_TIMEOUT'],
  tcp: ['TRV_SETUP_UNKNOWN_OPTION'],
  websocket: ['TRV_SETUP_UNKNOWN_OPTION'],
  codec: ['TRV_SETUP_UNKNOWN_OPTION'],
  openapi: ['TRV_SETUP_UNKNOWN_OPTION'],
  tracing: ['TRV_SETUP_UNKNOWN_OPTION'],
  metrics: ['TRV_SETUP_UNKNOWN_OPTION'],
  wire: [],
}

const SHARED = new Set([
  'TRV_SETUP_UNKNOWN_OPTION',
  'TRV_SETUP_SHUTDOWN_GRACE',
  'TRV_SETUP_SHUTDOWN_GRACE_TIMEOUT',
  'TRV_SETUP_UNKNOWN_ENDPOINT',
])

for (const [pkg, shared] of Object.entries(PACKAGES)) {
  t.test(`${pkg}: the README's table lists every code of the table, and nothing else`, async (t) => {
    const dir = new URL(`../../packages/${pkg}/`, import.meta.url)
    const { SETUP } = (await import(new URL('src/setup-errors.ts', dir).href)) as {
      SETUP: { rows: Record<string, { message: (...args: never[]) => string }> }
    }
    const readme = readFileSync(new URL('README.md', dir), 'utf8')
    const section = readme.split('\n## Setup errors\n')[1]?.split('\n## ')[0] ?? ''
    const listed = [...section.matchAll(/^\| `(TRV_[A-Z_]+)` \|/gm)].map((m) => m[1] ?? '')
    t.same(listed.sort(), [...shared, ...Object.keys(SETUP.rows)].sort())
    for (const code of shared) t.ok(SHARED.has(code), `${code} is a shared code`)
    for (const code of Object.keys(SETUP.rows)) {
      const err = (SETUP as unknown as Record<string, (...args: unknown[]) => Error & { code: string }>)[
        code
      ]?.()
      t.ok(err instanceof TypeError, `${code}: a TypeError`)
      t.equal(err?.code, code)
    }
  })
}
