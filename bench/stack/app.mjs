// The full Trivium stack of the benches (core + codec + auth + RBAC middleware + rate limiting + security
// headers + CORS) and its two endpoints, registered on a Fastify instance: one definition for
// stack/server.mjs, side-by-side/stack-ceiling.mjs and js-path/case.mjs, so that they measure the same app.
import triviumAuth from '@trivium/auth'
import triviumCodec from '@trivium/codec'
import trivium, { triviumFactoryOptions } from '@trivium/core'
import triviumMetrics from '@trivium/metrics'
import triviumProtections from '@trivium/protections'
import { createRbacMiddleware } from '@trivium/rbac'
import Fastify from 'fastify'
import { registerEndpoints } from './endpoints.mjs'

/**
 * A new app with the stack. Fastify is imported here, after the Trivium packages, as the bench servers
 * always did: the order in which modules are first evaluated alone moves a process by up to ~20 %
 * (bench/README.md, "What one process's layout does to these ratios").
 */
export async function createStackApp(options) {
  const app = Fastify({ ...triviumFactoryOptions(), logger: false })
  if (options?.dropStages) {
    const addHook = app.addHook.bind(app)
    app.addHook = (name, hook) => (name === 'preHandler' || name === 'onSend' ? app : addHook(name, hook))
  }
  await registerStack(app, options)
  return app
}

/** Registers the stack on `fastify`, then its two endpoints (stack/endpoints.mjs). */
export async function registerStack(fastify, { metrics = false, securityHeaders, protections } = {}) {
  await fastify.register(trivium)
  await fastify.register(triviumCodec)
  // metrics: the same stack with @trivium/metrics observing every call (issue 18: within 3%).
  if (metrics) await fastify.register(triviumMetrics, { expose: true })
  await fastify.register(triviumAuth, {
    secret: 'bench-secret-bench-secret-bench-secret-0123',
    issuer: 'bench',
  })
  fastify.trivium.use(createRbacMiddleware(), { name: 'rbac', after: ['auth'] })
  // A limit the load cannot reach: the counter is still checked and updated on every request.
  await fastify.register(triviumProtections, {
    rateLimit: { defaultLimit: { requests: 1e9, windowMs: 60_000 } },
    // `false`: js-path/headers-fallback.mjs sets them itself, to measure the plugin's fallback.
    ...(securityHeaders === undefined ? {} : { securityHeaders }),
    // js-path/case.mjs's JS_PATH_STACK_WITHOUT: parts left out, to see what each costs a request.
    ...protections,
  })
  registerEndpoints(fastify)
}

/** An access token for `secure.hello` (call once the stack's context has loaded). */
export function issueBenchToken(fastify) {
  return fastify.triviumAuth.issueAccessToken({
    id: 1,
    username: 'bench',
    email: 'bench@example.com',
    roles: ['member'],
    permissions: ['hello:read'],
  })
}
