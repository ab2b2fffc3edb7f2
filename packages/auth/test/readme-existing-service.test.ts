// Runs the root README's "Adding Trivium to an existing service" example as written.
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { SECRET } from './helpers.js'

const here = dirname(fileURLToPath(import.meta.url))
const readme = readFileSync(join(here, '..', '..', '..', 'README.md'), 'utf8')
const marker = '<!-- tested: packages/auth/test/readme-existing-service.test.ts -->'

t.test(
  'the README example: public health, token-guarded legacy route at 2/min, headers and CORS',
  async (t) => {
    const start = readme.indexOf(marker)
    t.ok(start > 0, 'the README section is there')
    const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(start))![1]!
    const file = join(here, `.readme-existing-service-${process.pid}.ts`)
    writeFileSync(file, block)
    t.teardown(() => rmSync(file, { force: true }))
    const { buildApp } = (await import(file)) as { buildApp: (secret: string) => Promise<FastifyInstance> }
    const app = await buildApp(SECRET)
    t.teardown(() => app.close())
    await app.ready()

    const health = await app.inject({ url: '/health' })
    t.equal(health.statusCode, 200)
    t.equal(health.headers['x-content-type-options'], 'nosniff', 'security headers on a plain route')

    const anonymous = await app.inject({ url: '/legacy/report' })
    t.equal(anonymous.statusCode, 401)
    t.match(anonymous.json(), {
      statusCode: 401,
      error: 'UnauthorizedException',
      message: 'Authentication required',
    })

    const token = await app.triviumAuth.issueAccessToken({ id: 4, username: 'rae', email: 'rae@example.com' })
    const headers = { authorization: `Bearer ${token}` }
    const codes: number[] = []
    for (let i = 0; i < 3; i++) codes.push((await app.inject({ url: '/legacy/report', headers })).statusCode)
    t.same(codes, [200, 200, 429])
    t.same((await app.inject({ url: '/reports/latest', headers })).json(), { report: 'q4', for: 4 })

    const preflight = await app.inject({
      method: 'OPTIONS',
      url: '/legacy/report',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' },
    })
    t.equal(preflight.headers['access-control-allow-origin'], 'https://app.example.com')
  },
)
