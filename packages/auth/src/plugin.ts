// The Fastify plugin: validates options, builds the token service, the revocation list and the
// authentication middleware, registers the middleware on core as `auth`, and decorates
// `fastify.triviumAuth` (not `auth`: that name belongs to the official @fastify/auth).
import { checkEndpointNames, refuseUnknownOptions } from '@trivium/core/internal'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { registerFlows } from './flow-endpoints.js'
import { type AuthFlows, createAuthFlows } from './flows.js'
import { MemoryTokenLedger, type TokenLedger } from './ledger.js'
import { type AuthMode, createAuthMiddleware } from './middleware.js'
import {
  AUTH_OPTIONS,
  checkNames,
  checkSecretStrength,
  checkStore,
  FLOWS_OPTIONS,
  type TriviumAuthOptions,
} from './plugin-options.js'
import { MemoryRevocationStore, type RevocationStore } from './revocation.js'
import { installRouteGuard } from './routes.js'
import { AuthService } from './service.js'
import { SETUP } from './setup-errors.js'
import { TokenService } from './tokens.js'

declare module 'fastify' {
  interface FastifyInstance {
    triviumAuth: AuthService
    /**
     * The credential flows as functions: decorated only when the `flows` option is given, so it is
     * `undefined` otherwise and the type says so (check it, or keep the narrowed value from one check).
     */
    authFlows?: AuthFlows
  }
}

const AUTH_MODES: readonly AuthMode[] = ['public', 'optional', 'required']
const PLUGIN = '@trivium/auth'

const triviumAuth: FastifyPluginAsync<TriviumAuthOptions> = async (fastify: FastifyInstance, options) => {
  if (typeof options !== 'object' || options === null) throw SETUP.TRV_AUTH_OPTIONS()
  if (!fastify.hasDecorator('trivium'))
    throw new Error(`${PLUGIN}: register @trivium/core before @trivium/auth`)
  refuseUnknownOptions(PLUGIN, options, AUTH_OPTIONS)
  const publicEndpoints = checkNames(options.publicEndpoints, 'publicEndpoints')
  const optionalEndpoints = checkNames(options.optionalEndpoints, 'optionalEndpoints')
  checkSecretStrength(options)
  const tokens = new TokenService({
    secret: options.secret,
    issuer: options.issuer,
    accessTokenTtlSeconds: options.accessTokenTtlSeconds,
    clock: options.clock,
    verifiedCacheSize: options.verifiedCacheSize,
  })
  const ownStore = options.revocationStore === undefined
  const revocation = ownStore
    ? new MemoryRevocationStore({ clock: options.clock })
    : checkStore(options.revocationStore)
  const flows = checkFlows(options.flows)
  const ledger: TokenLedger = options.ledger ?? new MemoryTokenLedger()
  // Stores with tables of their own (SqlUserStore, SqlTokenLedger) create them before serving.
  await flows?.users?.migrate?.()
  await ledger.migrate?.()
  const service = new AuthService({
    tokens,
    revocation,
    rolesProvider: options.rolesProvider,
    ledger,
    onListenerError: (err) => fastify.log.warn({ err }, `${PLUGIN}: an onRevoked listener failed`),
  })
  if (options.onRevoked !== undefined) service.onRevoked(options.onRevoked)
  fastify.decorate('triviumAuth', service)

  if (flows !== undefined) {
    const authFlows =
      flows.registerEndpoints === false
        ? createAuthFlows(service, flows)
        : registerFlows(fastify.trivium, service, flows)
    fastify.decorate('authFlows', authFlows)
  }

  scheduleCleanup(fastify, options.cleanupIntervalMs, tokens, revocation, ledger)

  // Plain routes opt into the same rules with config.triviumRoute (before or after this plugin).
  // `request.user` stays the application's (@fastify/jwt decorates it) unless it opts in with requestUser.
  const requestUser = options.requestUser ?? false
  if (typeof requestUser !== 'boolean') throw SETUP.TRV_AUTH_REQUEST_USER()
  installRouteGuard(fastify, requestUser)

  if (options.middleware !== false) {
    fastify.trivium.use(createAuthMiddleware({ tokens, revocation, publicEndpoints, optionalEndpoints }), {
      name: 'auth',
    })
  }
  fastify.addHook('onReady', async () => checkEndpoints(fastify, publicEndpoints, optionalEndpoints))
  if (ownStore) fastify.addHook('onClose', async () => revocation.close?.())
}

/** The `flows` option: an object of flow stores (the SQL ones are `@trivium/auth/sql`'s, given as stores). */
function checkFlows(flows: TriviumAuthOptions['flows']): TriviumAuthOptions['flows'] {
  if (flows !== undefined && (typeof flows !== 'object' || flows === null)) {
    throw SETUP.TRV_AUTH_FLOWS()
  }
  if (flows !== undefined && 'sql' in flows) {
    throw SETUP.TRV_AUTH_FLOWS_SQL()
  }
  refuseUnknownOptions(PLUGIN, flows, FLOWS_OPTIONS, 'flows.')
  return flows
}

/** Drops expired revocations and ledger entries every `cleanupIntervalMs` (default 10 min; 0: never). */
function scheduleCleanup(
  fastify: FastifyInstance,
  cleanupIntervalMs: number | undefined,
  tokens: TokenService,
  revocation: RevocationStore,
  ledger: TokenLedger,
): void {
  const interval = cleanupIntervalMs ?? 600_000
  if (!Number.isSafeInteger(interval) || interval < 0) {
    throw SETUP.TRV_AUTH_CLEANUP_INTERVAL()
  }
  if (interval === 0) return
  const timer = setInterval(() => {
    const nowSec = Math.floor(tokens.clock() / 1000)
    Promise.all([revocation.cleanup(), ledger.cleanup(nowSec)]).catch((err: unknown) => {
      fastify.log.warn(
        { code: (err as { code?: string } | null)?.code },
        `${PLUGIN}: cleanup of expired entries failed`,
      )
    })
  }, interval)
  timer.unref()
  fastify.addHook('onClose', async () => clearInterval(timer))
}

/** At `ready()`: the endpoints the options name exist, and every endpoint's `auth` is a known mode. */
function checkEndpoints(
  fastify: FastifyInstance,
  publicEndpoints: readonly string[],
  optionalEndpoints: readonly string[],
): void {
  const registry = fastify.trivium.registry
  checkEndpointNames(registry, PLUGIN, 'publicEndpoints', publicEndpoints)
  checkEndpointNames(registry, PLUGIN, 'optionalEndpoints', optionalEndpoints)
  for (const def of registry.list()) {
    const mode = def.config.auth
    if (mode !== undefined && !AUTH_MODES.includes(mode)) {
      throw SETUP.TRV_AUTH_ENDPOINT_MODE(def.name, AUTH_MODES.join(', '))
    }
  }
}

export const triviumAuthPlugin = fp(triviumAuth, {
  fastify: '^5.12.1',
  name: PLUGIN,
  // Needs `fastify.trivium`; the dependency check names the plugin to register (clearer than a
  // missing-decorator error).
  dependencies: ['@trivium/core'],
})
