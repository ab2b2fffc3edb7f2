// Issue 31 "Narrow and honest types": the main entry is what a service needs (explicit export list);
// the building blocks of Trivium's own transports, plugins and tests are under `@trivium/core/internal`,
// declared in `exports` and, for node10 resolution, in `typesVersions`.
import { readFileSync } from 'node:fs'
import * as core from '@trivium/core'
import * as internal from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))

const BUILDING_BLOCKS = [
  'CALL',
  'TRANSPORT_OVERRIDE',
  'Pipeline',
  'EndpointRegistry',
  'FormatRegistry',
  'HttpMapping',
  'jsonFormat',
  'encodePayload',
  'isThenable',
  'enforcesSettings',
  'checkEndpointNames',
  'SHUTDOWN_MESSAGE',
  'MISSING_HOST',
  'isNamedRoute',
  'NamedRouteError',
] as const

t.test('the main entry leaves the building blocks to ./internal', async (t) => {
  const names = Object.keys(core)
  for (const name of BUILDING_BLOCKS) {
    t.notOk(names.includes(name), `${name} is not exported from @trivium/core`)
    t.ok(Object.keys(internal).includes(name), `${name} is exported from @trivium/core/internal`)
  }
  // 41 since issue 41/45 added schemaModel and triviumHttp2Options, both a service's own calls.
  t.ok(names.length <= 41, `${names.length} runtime exports`)
  t.equal(typeof core.default, 'function')
  t.equal(core.default, core.triviumCorePlugin)
})

t.test('./internal is a declared entry, with its types for node10 resolution', async (t) => {
  t.same(Object.keys(manifest.exports).sort(), ['.', './internal', './package.json'])
  t.same(manifest.exports['./internal'], { types: './dist/internal.d.ts', default: './dist/internal.js' })
  t.same(manifest.typesVersions, { '*': { internal: ['./dist/internal.d.ts'] } })
})

t.test('a guarded plain route is told apart from an endpoint call by its target', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(core.default)
  const endpoint = app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({}))
  const route: core.GuardedRoute = {
    kind: 'route',
    name: 'GET /legacy',
    method: 'GET',
    url: '/legacy',
    config: {},
    timeoutMs: undefined,
    streaming: false,
  }
  const common = { protocol: 'http', requestId: 'req-1', log: app.log, decodeBody: () => undefined } as const
  const routeCall = new core.TriviumCall<unknown, core.CallTarget>({ definition: route, ...common })
  const endpointCall = new core.TriviumCall<unknown, core.CallTarget>({ definition: endpoint, ...common })
  t.equal(core.isEndpointCall(routeCall), false)
  t.equal(routeCall.endpoint, 'GET /legacy')
  t.equal(core.isEndpointCall(endpointCall), true)
  t.equal(endpointCall.definition.kind, 'endpoint')
})
