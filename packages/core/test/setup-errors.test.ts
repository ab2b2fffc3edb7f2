// Issue 43 item 4: core's setup refusals are TypeErrors with a stable code from one table
// (src/setup-errors.ts), and the README's "Setup errors" table lists exactly those codes.
import { readFileSync } from 'node:fs'
import trivium from '@trivium/core'
import { CORE_SETUP, SHARED_SETUP, UNKNOWN_OPTION } from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'

/** The codes of a README's "Setup errors" table. */
function readmeCodes(readme: string): string[] {
  const section = readme.split('\n## Setup errors\n')[1]?.split('\n## ')[0] ?? ''
  return [...section.matchAll(/^\| `(TRV_[A-Z_]+)` \|/gm)].map((m) => m[1] ?? '')
}

t.test("the README's table lists every code of the tables, and nothing else", async (t) => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  t.same(readmeCodes(readme).sort(), [
    ...[UNKNOWN_OPTION, ...Object.keys(CORE_SETUP.rows), ...Object.keys(SHARED_SETUP.rows)].sort(),
  ])
})

t.test('each refusal is a TypeError with its code', async (t) => {
  for (const [options, code] of [
    [{ bodyLimit: 0 }, 'TRV_CORE_BODY_LIMIT'],
    [{ notFoundHandler: 'yes' }, 'TRV_CORE_NOT_FOUND_HANDLER'],
    [{ errorHandler: 1 }, 'TRV_CORE_ERROR_HANDLER'],
    [{ compression: 'gzip' }, 'TRV_CORE_COMPRESSION'],
    [{ shutdownGraceMs: 0.5 }, 'TRV_SETUP_SHUTDOWN_GRACE'],
    [{ bodylimit: 1 }, 'TRV_SETUP_UNKNOWN_OPTION'],
  ] as const) {
    const app = Fastify()
    t.teardown(() => app.close())
    const err = await app.register(trivium, options as never).then(
      () => undefined,
      (e: unknown) => e,
    )
    t.ok(err instanceof TypeError, `${code}: a TypeError`)
    t.equal((err as { code?: string }).code, code)
  }
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(trivium)
  t.throws(() => app.trivium.use('not a function' as never), { code: 'TRV_CORE_MIDDLEWARE' })
})
