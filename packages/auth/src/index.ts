// @trivium/auth — the Fastify plugin. Validates options, builds the token service, the revocation list
// and the authentication middleware, registers the middleware on core as `auth`, and decorates
// `fastify.auth`.

import type { SqlClient } from '@trivium/sql'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { type AuthFlows, createAuthFlows, type FlowsOptions, registerFlows } from './flows.js'
import { MemoryTokenLedger, type TokenLedger } from './ledger.js'
import { type AuthMode, createAuthMiddleware } from './middleware.js'
import { MemoryRevocationStore, type RevocationStore } from './revocation.js'
import { AuthService, type RolesProvider } from './service.js'
import { migrateAuth, SqlTokenLedger } from './sql-store.js'
import { type Clock, MIN_SECRET_BYTES, TokenService } from './tokens.js'
import { SqlUserStore, type UserStore } from './users.js'

export * from './claims.js'
export * from './flows.js'
export * from './ledger.js'
export * from './middleware.js'
export * from './revocation.js'
export * from './service.js'
export * from './sql-store.js'
export * from './tokens.js'
export * from './users.js'

/** Options of the credential flows: a SQL client (users + ledger tables) or your own user store. */
export interface TriviumAuthFlowsOptions extends Omit<FlowsOptions, 'users'> {
  /** PostgreSQL or PGlite client: SqlUserStore, and SqlTokenLedger unless `ledger` is given. Migrated at start. */
  sql?: SqlClient
  /** A user store of your own (instead of `sql`). */
  users?: UserStore
  /**
   * Register the `/auth/*` endpoints (default true). With false, only `fastify.authFlows` is
   * decorated, so an application can serve the flows under its own models and routes.
   */
  registerEndpoints?: boolean
}

export interface TriviumAuthOptions {
  /** HS256 signing secret. Required; at least 32 bytes when NODE_ENV=production. */
  secret: string | Buffer
  /** Issuer (`iss`) written into and required from every token. */
  issuer: string
  /** Default access-token lifetime in seconds (default 3600). */
  accessTokenTtlSeconds?: number
  /** Revocation list (default: in-memory). */
  revocationStore?: RevocationStore
  /** Issued-token ledger for refresh rotation and theft response (default: in-memory). */
  ledger?: TokenLedger
  /** Endpoint names that need no token. */
  publicEndpoints?: string[]
  /** Endpoint names where the token is optional. */
  optionalEndpoints?: string[]
  /** Fills roles/permissions of issued access tokens (e.g. from @trivium/rbac). */
  rolesProvider?: RolesProvider
  /** Verified-token cache entries (default 10 000; 0 disables). */
  verifiedCacheSize?: number
  /** Register the middleware on `fastify.trivium` as `auth` (default true). */
  middleware?: boolean
  /** Clock in ms since epoch (tests). */
  clock?: Clock
  /** Register the credential endpoints (auth.register, auth.login, auth.refresh, …). */
  flows?: TriviumAuthFlowsOptions
  /** Sweep expired revocation entries and ledger rows every this many ms (default 600 000; 0 = never). */
  cleanupIntervalMs?: number
}

declare module 'fastify' {
  interface FastifyInstance {
    auth: AuthService
    /** The credential flows as functions (present when the `flows` option is given). */
    authFlows: AuthFlows
  }
}

const AUTH_MODES: readonly AuthMode[] = ['public', 'optional', 'required']

function checkNames(value: unknown, name: string): string[] {
  if (value === undefined) return []
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw new TypeError(`@trivium/auth: ${name} must be a list of endpoint names`)
  }
  return value
}

function checkStore(store: unknown): RevocationStore {
  const s = store as RevocationStore
  if (
    typeof s !== 'object' ||
    s === null ||
    typeof s.add !== 'function' ||
    typeof s.contains !== 'function' ||
    typeof s.remove !== 'function' ||
    typeof s.cleanup !== 'function'
  ) {
    throw new TypeError('@trivium/auth: revocationStore must implement add, contains, remove and cleanup')
  }
  return s
}

const triviumAuth: FastifyPluginAsync<TriviumAuthOptions> = async (fastify: FastifyInstance, options) => {
  if (typeof options !== 'object' || options === null)
    throw new TypeError('@trivium/auth: options are required')
  const publicEndpoints = checkNames(options.publicEndpoints, 'publicEndpoints')
  const optionalEndpoints = checkNames(options.optionalEndpoints, 'optionalEndpoints')
  const tokens = new TokenService({
    secret: options.secret,
    issuer: options.issuer,
    accessTokenTtlSeconds: options.accessTokenTtlSeconds,
    clock: options.clock,
    verifiedCacheSize: options.verifiedCacheSize,
  })
  const secretBytes = Buffer.isBuffer(options.secret)
    ? options.secret.length
    : Buffer.byteLength(options.secret)
  if (secretBytes < MIN_SECRET_BYTES) {
    fastify.log.warn(
      `@trivium/auth: the signing secret is shorter than ${MIN_SECRET_BYTES} bytes (refused in production)`,
    )
  }
  const ownStore = options.revocationStore === undefined
  const revocation = ownStore
    ? new MemoryRevocationStore({ clock: options.clock })
    : checkStore(options.revocationStore)
  const flows = options.flows
  if (flows !== undefined && (typeof flows !== 'object' || flows === null)) {
    throw new TypeError('@trivium/auth: flows must be an object')
  }
  if (flows?.sql !== undefined) await migrateAuth(flows.sql)
  const ledger = options.ledger ?? (flows?.sql ? new SqlTokenLedger(flows.sql) : new MemoryTokenLedger())
  const service = new AuthService({ tokens, revocation, rolesProvider: options.rolesProvider, ledger })
  fastify.decorate('auth', service)

  if (flows !== undefined) {
    if (!fastify.hasDecorator('trivium'))
      throw new Error('@trivium/auth: register @trivium/core before @trivium/auth')
    const users = flows.users ?? (flows.sql ? new SqlUserStore(flows.sql) : undefined)
    const flowOptions = { ...flows, users: users as UserStore }
    const authFlows =
      flows.registerEndpoints === false
        ? createAuthFlows(service, flowOptions)
        : registerFlows(fastify.trivium, service, flowOptions)
    fastify.decorate('authFlows', authFlows)
    // The dummy hash for timing-safe logins is computed in a worker; wait for it before serving.
    fastify.addHook('onReady', async () => authFlows.ready)
  }

  const interval = options.cleanupIntervalMs ?? 600_000
  if (!Number.isSafeInteger(interval) || interval < 0) {
    throw new TypeError('@trivium/auth: cleanupIntervalMs must be a non-negative integer')
  }
  if (interval > 0) {
    const timer = setInterval(() => {
      const nowSec = Math.floor(tokens.clock() / 1000)
      Promise.all([revocation.cleanup(), ledger.cleanup(nowSec)]).catch((err: unknown) => {
        fastify.log.warn(
          { code: (err as { code?: string })?.code },
          '@trivium/auth: cleanup of expired entries failed',
        )
      })
    }, interval)
    timer.unref()
    fastify.addHook('onClose', async () => clearInterval(timer))
  }

  if (options.middleware !== false) {
    if (!fastify.hasDecorator('trivium')) {
      throw new Error('@trivium/auth: register @trivium/core before @trivium/auth')
    }
    fastify.trivium.use(createAuthMiddleware({ tokens, revocation, publicEndpoints, optionalEndpoints }), {
      name: 'auth',
    })
    fastify.addHook('onReady', async () => {
      for (const def of fastify.trivium.registry.list()) {
        const mode = def.config.auth
        if (mode !== undefined && !AUTH_MODES.includes(mode)) {
          throw new TypeError(
            `@trivium/auth: endpoint "${def.name}": auth must be one of ${AUTH_MODES.join(', ')}`,
          )
        }
      }
    })
  }
  if (ownStore) fastify.addHook('onClose', async () => revocation.close?.())
}

export const triviumAuthPlugin = fp(triviumAuth, {
  fastify: '5.x',
  name: '@trivium/auth',
  dependencies: ['@trivium/core'],
})
export { triviumAuthPlugin as triviumAuth }
export default triviumAuthPlugin
