// Issue 43 item 5: an option name a plugin does not know is refused at registration (a typo such as
// `notFoundHandlr` was ignored silently), with the nearest name, as a TypeError with code
// TRV_SETUP_UNKNOWN_OPTION; the names Fastify itself puts in a plugin's options (`prefix`, `logLevel`,
// `logSerializers`) are accepted. Every plugin package, here because the demo depends on all of them.
import triviumAuth from '@trivium/auth'
import { triviumCodec } from '@trivium/codec'
import trivium from '@trivium/core'
import triviumCrypto from '@trivium/crypto'
import triviumMetrics from '@trivium/metrics'
import triviumOpenApi from '@trivium/openapi'
import triviumProtections, { cors, rateLimit, securityHeaders } from '@trivium/protections'
import triviumRbac from '@trivium/rbac'
import triviumTcp from '@trivium/tcp'
import triviumTracing from '@trivium/tracing'
import triviumValidation from '@trivium/validation'
import triviumWebSocket from '@trivium/websocket'
import Fastify, { type FastifyPluginAsync } from 'fastify'
import t from 'tap'

const SECRET = 'plugin-options-secret-plugin-options-secret'
const KEY = Buffer.alloc(32, 7).toString('base64')

interface Case {
  plugin: FastifyPluginAsync<never>
  /** Registered before it (core, then what it needs). */
  core: boolean
  options: Record<string, unknown>
  message: string
}

const cases: Record<string, Case> = {
  core: {
    plugin: trivium as never,
    core: false,
    options: { notFoundHandlr: false },
    message: '@trivium/core: unknown option "notFoundHandlr" (did you mean "notFoundHandler"?)',
  },
  auth: {
    plugin: triviumAuth as never,
    core: true,
    options: { secret: SECRET, isuer: 'x' },
    message: '@trivium/auth: unknown option "isuer" (did you mean "issuer"?)',
  },
  'auth flows': {
    plugin: triviumAuth as never,
    core: true,
    options: { secret: SECRET, issuer: 'x', flows: { basepath: '/auth' } },
    message: '@trivium/auth: unknown option "flows.basepath" (did you mean "basePath"?)',
  },
  codec: {
    plugin: triviumCodec as never,
    core: true,
    options: { strict: true },
    message: '@trivium/codec: unknown option "strict"',
  },
  crypto: {
    plugin: triviumCrypto as never,
    core: false,
    options: { encryptionKy: KEY },
    message: '@trivium/crypto: unknown option "encryptionKy" (did you mean "encryptionKey"?)',
  },
  metrics: {
    plugin: triviumMetrics as never,
    core: true,
    options: { exposee: true },
    message: '@trivium/metrics: unknown option "exposee" (did you mean "expose"?)',
  },
  openapi: {
    plugin: triviumOpenApi as never,
    core: true,
    options: { info: { title: 'T', version: '1' }, docPath: '/d' },
    message: '@trivium/openapi: unknown option "docPath" (did you mean "docsPath"?)',
  },
  protections: {
    plugin: triviumProtections as never,
    core: true,
    options: { rateLimits: false },
    message: '@trivium/protections: unknown option "rateLimits" (did you mean "rateLimit"?)',
  },
  'protections cors': {
    plugin: triviumProtections as never,
    core: true,
    options: { cors: { allowedOrigin: ['https://a.example'] } },
    message: '@trivium/protections: unknown option "cors.allowedOrigin" (did you mean "allowedOrigins"?)',
  },
  cors: {
    plugin: cors as never,
    core: false,
    options: { maxAg: 60 },
    message: '@trivium/protections: unknown option "maxAg" (did you mean "maxAge"?)',
  },
  rateLimit: {
    plugin: rateLimit as never,
    core: true,
    options: { afterAuht: false },
    message: '@trivium/protections: unknown option "afterAuht" (did you mean "afterAuth"?)',
  },
  securityHeaders: {
    plugin: securityHeaders as never,
    core: false,
    options: { header: {} },
    message: '@trivium/protections: unknown option "header" (did you mean "headers"?)',
  },
  rbac: {
    plugin: triviumRbac as never,
    core: true,
    // The sql client is checked first (it is required); the name check comes before it is used.
    options: { sql: {}, permission: {} },
    message: '@trivium/rbac: unknown option "permission" (did you mean "permissions"?)',
  },
  tcp: {
    plugin: triviumTcp as never,
    core: true,
    options: { partialFrameTimeout: 1000 },
    message: '@trivium/tcp: unknown option "partialFrameTimeout" (did you mean "partialFrameTimeoutMs"?)',
  },
  tracing: {
    plugin: triviumTracing as never,
    core: true,
    options: { tracr: undefined },
    message: '@trivium/tracing: unknown option "tracr" (did you mean "tracer"?)',
  },
  validation: {
    plugin: triviumValidation as never,
    core: true,
    options: { afterr: [] },
    message: '@trivium/validation: unknown option "afterr" (did you mean "after"?)',
  },
  websocket: {
    plugin: triviumWebSocket as never,
    core: true,
    options: { pingInterval: 1000 },
    message: '@trivium/websocket: unknown option "pingInterval" (did you mean "pingIntervalMs"?)',
  },
}

for (const [name, c] of Object.entries(cases)) {
  t.test(`${name}: an unknown option is refused at registration, naming the nearest`, async (t) => {
    const app = Fastify()
    t.teardown(() => app.close())
    if (c.core) await app.register(trivium)
    let thrown: unknown
    try {
      await app.register(c.plugin, c.options as never)
    } catch (err) {
      thrown = err
    }
    t.ok(thrown instanceof TypeError, 'a TypeError')
    t.match(thrown, { code: 'TRV_SETUP_UNKNOWN_OPTION', message: c.message })
    t.equal((thrown as Error).message, c.message)
  })
}

// What Fastify itself passes to a plugin's options, and every plugin registered with all three.
t.test('the options Fastify itself passes (prefix, logLevel, logSerializers) are accepted', async (t) => {
  const fastifyOwn = { prefix: '/p', logLevel: 'warn', logSerializers: { req: () => 'r' } }
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(trivium, fastifyOwn as never)
  await app.register(triviumCrypto, { ...fastifyOwn, encryptionKey: KEY, hashSalt: 'salt' } as never)
  await app.register(triviumAuth, { ...fastifyOwn, secret: SECRET, issuer: 'x' } as never)
  await app.register(triviumValidation, fastifyOwn as never)
  await app.register(triviumTracing, fastifyOwn as never)
  await app.register(triviumProtections, fastifyOwn as never)
  await app.register(triviumCodec, fastifyOwn as never)
  await app.register(triviumMetrics, fastifyOwn as never)
  await app.register(triviumOpenApi, { ...fastifyOwn, info: { title: 'T', version: '1' } } as never)
  await app.register(triviumWebSocket, fastifyOwn as never)
  await app.register(triviumTcp, fastifyOwn as never)
  await t.resolves(async () => app.ready())
})
