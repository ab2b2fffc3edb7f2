// The authentication middleware (PROTOCOL.md "Authentication"), on core's contract so that it runs the
// same on every transport. The transport supplies the credential (`call.credential`); this file only
// checks it and fills `call.identity` plus the context keys user_id, username, email, roles,
// permissions, token_claims and authenticated.
import {
  type CallTarget,
  directMiddleware,
  type Middleware,
  TokenExpiredException,
  type TriviumCall,
  type TriviumIdentity,
  UnauthorizedException,
} from '@trivium/core'
import { enforcesSettings, fillContext, TOKEN_EXPIRED_MESSAGE } from '@trivium/core/internal'
import type { TokenClaims } from './claims.js'
import { publishFailure } from './diagnostics.js'
import { MemoryRevocationStore, type RevocationStore } from './revocation.js'
import { SETUP } from './setup-errors.js'
import type { TokenService } from './tokens.js'

export type AuthMode = 'public' | 'optional' | 'required'

declare module '@trivium/core' {
  interface TriviumEndpointConfig {
    /**
     * Authentication of this endpoint: `public` (no token check), `optional` (a token is checked
     * when present) or `required` (the default). Wins over the plugin's endpoint lists.
     */
    auth?: AuthMode
  }
}

export const AUTHENTICATION_REQUIRED = 'Authentication required'
export const TOKEN_REVOKED = 'Token has been revoked'
export { TOKEN_EXPIRED_MESSAGE }

export interface AuthMiddlewareOptions {
  tokens: TokenService
  revocation: RevocationStore
  /** Endpoint names that pass with no token check (default empty). */
  publicEndpoints?: Iterable<string>
  /** Endpoint names where a token is optional (default empty). */
  optionalEndpoints?: Iterable<string>
}

/** The fields of an identity that come from the verified token (TriviumIdentity's readonly ones). */
const VERIFIED: ReadonlySet<PropertyKey> = new Set([
  'userId',
  'username',
  'roles',
  'permissions',
  'tokenId',
  'expiresAt',
])

function readOnly(key: PropertyKey): TypeError {
  return new TypeError(
    `@trivium/auth: call.identity.${String(key)} is read-only: it was verified from the token (add a field of your own to TriviumIdentity instead)`,
  )
}

/**
 * Guards the verified fields: assigning, redefining or deleting one throws whatever the caller's mode
 * (a strict-mode `false` would be silent in sloppy code). A Proxy, not per-field descriptors: V8 makes
 * `Object.defineProperty` on a fresh object an order of magnitude slower than the literal, per call.
 */
const VERIFIED_FIELDS: ProxyHandler<TriviumIdentity> = {
  // No `get` trap: reads go to the target. Declared as an own `undefined` so that each read's look-up of
  // the trap finds it here instead of missing through Object.prototype (the frame transports read three
  // fields per call, bench/README.md "Fourth pass").
  get: undefined,
  set(target, key, value) {
    if (VERIFIED.has(key)) throw readOnly(key)
    return Reflect.set(target, key, value)
  },
  defineProperty(target, key, descriptor) {
    // Object.freeze(identity) redefines every field without a value: allowed, it changes none.
    const changes =
      descriptor.get !== undefined ||
      descriptor.set !== undefined ||
      ('value' in descriptor && !Object.is(descriptor.value, Reflect.get(target, key)))
    if (changes && VERIFIED.has(key)) throw readOnly(key)
    return Reflect.defineProperty(target, key, descriptor)
  },
  deleteProperty(target, key) {
    if (VERIFIED.has(key)) throw readOnly(key)
    return Reflect.deleteProperty(target, key)
  },
}

/**
 * The identity carried by a token's claims, one object per call: the verified fields are read-only (the
 * frame transports read `userId`, `tokenId` and `expiresAt` from it after the handler ran, and a session
 * must not outlive its token) and the lists are the claims' frozen ones; fields an application declares
 * on TriviumIdentity can be added (README "Extending the identity").
 */
export function identityOf(claims: TokenClaims): TriviumIdentity {
  return new Proxy(
    {
      userId: claims.userId,
      username: claims.username,
      roles: claims.roles,
      permissions: claims.permissions,
      tokenId: claims.jti,
      expiresAt: claims.expiresAtMs,
    },
    VERIFIED_FIELDS,
  )
}

/** Sets `call.identity` and the context keys of PROTOCOL.md "Authentication". */
export function setUserContext(call: TriviumCall<unknown, CallTarget>, claims: TokenClaims): void {
  call.identity = identityOf(claims)
  // One literal: the call's context when it has none yet (the usual case), else assigned onto it.
  fillContext(call, {
    user_id: claims.userId,
    username: claims.username,
    email: claims.email,
    roles: claims.roles,
    permissions: claims.permissions,
    token_claims: claims,
    authenticated: true,
  })
}

/** The call's credential; a malformed one (given twice) counts as an invalid credential. */
function credentialOf(call: TriviumCall<unknown, CallTarget>): string | undefined {
  try {
    return call.credential
  } catch (err) {
    publishFailure('invalid')
    throw err
  }
}

/**
 * Validates a token and checks the revocation list; throws TokenExpiredException `Token has expired`,
 * UnauthorizedException `Invalid token: <error>` or `Token has been revoked`. A store outage
 * propagates as ServiceUnavailableException (fail closed).
 */
export async function authenticateToken(
  tokens: TokenService,
  revocation: RevocationStore,
  token: string,
): Promise<TokenClaims> {
  return notRevoked(revocation, validatedClaims(tokens, token))
}

/** `claims` once the revocation list says their token is not on it (else `Token has been revoked`). */
async function notRevoked(revocation: RevocationStore, claims: TokenClaims): Promise<TokenClaims> {
  const revoked =
    revocation instanceof MemoryRevocationStore
      ? revocation.containsSync(claims.jti)
      : await revocation.contains(claims.jti)
  if (revoked) throw revokedError()
  return claims
}

function revokedError(): UnauthorizedException {
  publishFailure('revoked')
  return new UnauthorizedException(TOKEN_REVOKED)
}

/**
 * A frame connection's last verified token and its claims (frozen: their `expiresAtMs` is the token's
 * `exp` as verified; no copy of it here, a boxed double per connection: bench/density).
 */
interface LastToken {
  /** Re-pointed at each hit's string (connectionClaims). */
  token: string
  readonly claims: TokenClaims
}

/**
 * Each connection's last verified token (WebSocket, TCP: `call.connection` is one object per
 * connection), so that its next call with the same token skips even the verified-token cache: its key,
 * Map lookup and constant-time comparison. One map per middleware, i.e. per verifier: a token verified
 * by one auth middleware (its secret, issuer) is never taken as verified by another on the same
 * connection.
 */
type LastTokens = WeakMap<object, LastToken>

/**
 * The claims of `token` on `call`'s connection: the connection's last verified token when `token` is
 * the same string and has not expired (the check the verified-token cache makes on a hit; a token with
 * `nbf` is stored only once valid, and stays valid as time goes on), else `validatedClaims`. The `===`
 * is not constant-time on purpose: it compares with a token this same connection sent before, so it
 * can only tell a client what it sent itself. With `verifiedCacheSize: 0` every call is verified.
 */
function connectionClaims(
  tokens: TokenService,
  lastTokens: LastTokens,
  call: TriviumCall<unknown, CallTarget>,
  token: string,
): TokenClaims {
  const connection = call.connection
  if (connection === undefined || tokens.verifiedCacheSize === 0) return validatedClaims(tokens, token)
  const last = lastTokens.get(connection)
  if (last !== undefined && last.token === token && tokens.clock() < last.claims.expiresAtMs) {
    // The same text may come as another string (a TCP connection decodes its metadata again after idling):
    // keep the one sent now, so that the next comparison finds the same string at once instead of
    // comparing a token's ~480 characters (~290 instructions a call, bench/README.md "Fourth pass").
    last.token = token
    return last.claims
  }
  const claims = validatedClaims(tokens, token)
  lastTokens.set(connection, { token, claims })
  return claims
}

/** The validation half of `authenticateToken` (no revocation check). */
function validatedClaims(tokens: TokenService, token: string): TokenClaims {
  const result = tokens.validate(token)
  if (result.isExpired) {
    publishFailure('expired')
    throw new TokenExpiredException(TOKEN_EXPIRED_MESSAGE)
  }
  if (!result.isValid || result.claims === undefined) {
    publishFailure('invalid')
    throw new UnauthorizedException(`Invalid token: ${result.error ?? 'unknown error'}`)
  }
  return result.claims
}

export function createAuthMiddleware(options: AuthMiddlewareOptions): Middleware {
  const { tokens, revocation } = options
  const lastTokens: LastTokens = new WeakMap()
  const publicSet = new Set(options.publicEndpoints ?? [])
  const optionalSet = new Set(options.optionalEndpoints ?? [])
  for (const name of [...publicSet, ...optionalSet]) {
    if (typeof name !== 'string') throw SETUP.TRV_AUTH_ENDPOINT_NAME()
  }

  function modeOf(call: TriviumCall<unknown, CallTarget>): AuthMode {
    const declared = call.definition.config.auth
    if (declared !== undefined) return declared
    if (publicSet.has(call.endpoint)) return 'public'
    if (optionalSet.has(call.endpoint)) return 'optional'
    return 'required'
  }

  // Not an async function: with the in-memory revocation list everything is synchronous, so the call
  // goes on without an extra promise and microtask. Errors still come back as a rejected promise.
  return enforcesSettings(
    ['auth'],
    directMiddleware(function auth(call, next) {
      try {
        const mode = modeOf(call)
        if (mode === 'public') return next()
        const token = credentialOf(call)
        if (token === undefined) {
          if (mode === 'optional') return next()
          publishFailure('missing')
          throw new UnauthorizedException(AUTHENTICATION_REQUIRED)
        }
        const claims = connectionClaims(tokens, lastTokens, call, token)
        if (!(revocation instanceof MemoryRevocationStore)) {
          return notRevoked(revocation, claims).then(() => {
            setUserContext(call, claims)
            return next()
          })
        }
        if (revocation.containsSync(claims.jti)) throw revokedError()
        setUserContext(call, claims)
        return next()
      } catch (err) {
        return Promise.reject(err)
      }
    }),
  )
}
