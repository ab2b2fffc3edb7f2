// The plugin's options and their checks (messages prefixed `@trivium/auth: ` name the fix).
import { optionNames } from '@trivium/core/internal'
import type { FlowsOptions } from './flows.js'
import type { TokenLedger } from './ledger.js'
import type { RevocationStore } from './revocation.js'
import type { RevokedListener, RolesProvider } from './service.js'
import { SETUP } from './setup-errors.js'
import { type Clock, MIN_SECRET_BYTES } from './tokens.js'

/** Options of the credential flows: a user store (e.g. SqlUserStore from `@trivium/auth/sql`). */
export interface TriviumAuthFlowsOptions extends FlowsOptions {
  /**
   * Register the `/auth/*` endpoints (default true). With false, only `fastify.authFlows` is
   * decorated, so an application can serve the flows under its own models and routes.
   */
  registerEndpoints?: boolean
}

export interface TriviumAuthOptions {
  /** HS256 signing secret: at least 32 bytes (see `allowWeakSecretForTesting`). */
  secret: string | Buffer
  /** Accept a secret shorter than 32 bytes. For tests only; refused when NODE_ENV=production. */
  allowWeakSecretForTesting?: boolean
  /** Issuer (`iss`) written into and required from every token. */
  issuer: string
  /** Default access-token lifetime in seconds (default 3600). */
  accessTokenTtlSeconds?: number
  /** Revocation list (default: in-memory). */
  revocationStore?: RevocationStore
  /** Issued-token ledger for refresh rotation and theft response (default: in-memory). */
  ledger?: TokenLedger
  /** Endpoint names that need no token (checked at ready()). */
  publicEndpoints?: string[]
  /** Endpoint names where the token is optional (checked at ready()). */
  optionalEndpoints?: string[]
  /** Fills roles/permissions of issued access tokens (e.g. from @trivium/rbac). */
  rolesProvider?: RolesProvider
  /** Verified-token cache entries (default 10 000; 0 disables). */
  verifiedCacheSize?: number
  /** Register the middleware on `fastify.trivium` as `auth` (default true). */
  middleware?: boolean
  /**
   * Give `request.user` to Trivium (default false): on `config.triviumRoute` routes it is the caller
   * (TriviumIdentity, undefined when anonymous), unless a hook of the application set it first. Off, the
   * caller is only `triviumUser(request)` and `request.user` stays the application's (@fastify/jwt's).
   * Refused at start beside a plugin that decorates `request.user` (@fastify/jwt); type it with
   * `TriviumRequestUser` (README "Protecting existing routes").
   */
  requestUser?: boolean
  /** Clock in ms since epoch (tests). */
  clock?: Clock
  /** Register the credential endpoints (auth.register, auth.login, auth.refresh, …). */
  flows?: TriviumAuthFlowsOptions
  /** Sweep expired revocation entries and ledger rows every this many ms (default 600 000; 0 = never). */
  cleanupIntervalMs?: number
  /**
   * Called after every revocation (logout, refresh-token reuse, `revokeToken`, `revokeAllForUser`):
   * close the matching sessions here, e.g. `(notice) => fastify.push.closeSessions(notice, 'Token has
   * been revoked')`. Same as `fastify.triviumAuth.onRevoked(listener)`.
   */
  onRevoked?: RevokedListener
}

/** The message of TRV_AUTH_WEAK_SECRET. */
export const WEAK_SECRET = SETUP.TRV_AUTH_WEAK_SECRET(MIN_SECRET_BYTES).message

/** Refuses a short secret unless tests opted in (never in production). */
export function checkSecretStrength(options: TriviumAuthOptions): void {
  const secret = options.secret
  if (typeof secret !== 'string' && !Buffer.isBuffer(secret)) return // TokenService names the type error
  const bytes = Buffer.isBuffer(secret) ? secret.length : Buffer.byteLength(secret)
  if (bytes === 0 || bytes >= MIN_SECRET_BYTES) return // empty: TokenService says so
  const optIn = options.allowWeakSecretForTesting
  if (optIn !== undefined && typeof optIn !== 'boolean') throw SETUP.TRV_AUTH_WEAK_SECRET_OPT_IN()
  if (optIn !== true || process.env.NODE_ENV === 'production')
    throw SETUP.TRV_AUTH_WEAK_SECRET(MIN_SECRET_BYTES)
}

export function checkNames(value: unknown, name: string): string[] {
  if (value === undefined) return []
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw SETUP.TRV_AUTH_ENDPOINT_NAMES(name)
  }
  return value
}

export function checkStore(store: unknown): RevocationStore {
  const s = store as Partial<RevocationStore> | null
  if (
    typeof s !== 'object' ||
    s === null ||
    typeof s.add !== 'function' ||
    typeof s.contains !== 'function' ||
    typeof s.remove !== 'function' ||
    typeof s.cleanup !== 'function'
  ) {
    throw SETUP.TRV_AUTH_REVOCATION_STORE()
  }
  return s as RevocationStore
}

/** Every option name of the plugin: any other is refused with the nearest one named. */
export const AUTH_OPTIONS = optionNames<TriviumAuthOptions>()(
  'secret',
  'allowWeakSecretForTesting',
  'issuer',
  'accessTokenTtlSeconds',
  'revocationStore',
  'ledger',
  'publicEndpoints',
  'optionalEndpoints',
  'rolesProvider',
  'verifiedCacheSize',
  'middleware',
  'requestUser',
  'clock',
  'flows',
  'cleanupIntervalMs',
  'onRevoked',
)

/** Every option name of `flows`. */
export const FLOWS_OPTIONS = optionNames<TriviumAuthFlowsOptions>()(
  'registerEndpoints',
  'users',
  'encryptionKey',
  'basePath',
  'passwordMinLength',
  'totpIssuer',
  'onRegistered',
  'onTheft',
)
