// The authentication middleware (spec "Authentication middleware"), on core's contract so that it runs
// the same on HTTP, WebSocket and TCP.
import {
  type Middleware,
  TokenExpiredException,
  type TriviumCall,
  UnauthorizedException,
} from '@trivium/core'
import type { TokenClaims } from './claims.js'
import { MemoryRevocationStore, type RevocationStore } from './revocation.js'
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
export const TOKEN_EXPIRED_MESSAGE = 'Token has expired'

export interface AuthMiddlewareOptions {
  tokens: TokenService
  revocation: RevocationStore
  /** Endpoint names that pass with no token check (default empty). */
  publicEndpoints?: Iterable<string>
  /** Endpoint names where a token is optional (default empty). */
  optionalEndpoints?: Iterable<string>
}

function first(value: unknown): string | undefined {
  if (typeof value === 'string') return value
  if (Array.isArray(value) && typeof value[0] === 'string') return value[0]
  return undefined
}

/** `Bearer ` at the start, any case, compared in place (no substring, no lower-cased copy). */
function hasBearerScheme(header: string): boolean {
  if (header.startsWith('Bearer ')) return true
  return header.slice(0, 7).toLowerCase() === 'bearer '
}

function fromHeader(call: TriviumCall<any>): string | undefined {
  const header = first(call.headers.authorization)
  if (header === undefined) return undefined
  // The auth scheme is case-insensitive (RFC 9110 §11.1); exactly one space, then the token.
  if (header.length < 8 || !hasBearerScheme(header)) return undefined
  const token = header.slice(7).trim()
  return token.length > 0 ? token : undefined
}

function fromQuery(call: TriviumCall<any>): string | undefined {
  const token = first(call.query.token)
  return token !== undefined && token.length > 0 ? token : undefined
}

/**
 * The spec's extraction: `http` header then query; `websocket` query then header; `tcp` the
 * metadata key `auth_token`; any other protocol: none.
 */
export function extractToken(call: TriviumCall<any>): string | undefined {
  switch (call.protocol) {
    case 'http':
      return fromHeader(call) ?? fromQuery(call)
    case 'websocket':
      return fromQuery(call) ?? fromHeader(call)
    case 'tcp': {
      const token = call.metadata.auth_token
      return typeof token === 'string' && token.length > 0 ? token : undefined
    }
    default:
      return undefined
  }
}

/** Puts the spec's keys in the call context. */
export function setUserContext(call: TriviumCall<any>, claims: TokenClaims): void {
  const context = call.context
  context.user_id = claims.userId
  context.username = claims.username
  context.email = claims.email
  context.roles = claims.roles
  context.permissions = claims.permissions
  context.token_claims = claims
  context.authenticated = true
}

/**
 * Validates a token and checks the revocation list; throws the spec's errors
 * (TokenExpiredException `Token has expired`, UnauthorizedException `Invalid token: <error>` or
 * `Token has been revoked`). A store outage propagates as ServiceUnavailableException (fail closed).
 */
export async function authenticateToken(
  tokens: TokenService,
  revocation: RevocationStore,
  token: string,
): Promise<TokenClaims> {
  const claims = validatedClaims(tokens, token)
  const revoked =
    revocation instanceof MemoryRevocationStore
      ? revocation.containsSync(claims.jti)
      : await revocation.contains(claims.jti)
  if (revoked) throw new UnauthorizedException(TOKEN_REVOKED)
  return claims
}

/** The validation half of `authenticateToken` (no revocation check); throws the spec's errors. */
function validatedClaims(tokens: TokenService, token: string): TokenClaims {
  const result = tokens.validate(token)
  if (result.isExpired) throw new TokenExpiredException(TOKEN_EXPIRED_MESSAGE)
  if (!result.isValid || result.claims === undefined) {
    throw new UnauthorizedException(`Invalid token: ${result.error ?? 'unknown error'}`)
  }
  return result.claims
}

export function createAuthMiddleware(options: AuthMiddlewareOptions): Middleware {
  const { tokens, revocation } = options
  const publicSet = new Set(options.publicEndpoints ?? [])
  const optionalSet = new Set(options.optionalEndpoints ?? [])
  for (const name of [...publicSet, ...optionalSet]) {
    if (typeof name !== 'string') throw new TypeError('@trivium/auth: endpoint names must be strings')
  }

  function modeOf(call: TriviumCall<any>): AuthMode {
    const declared = call.definition.config.auth
    if (declared !== undefined) return declared
    if (publicSet.has(call.endpoint)) return 'public'
    if (optionalSet.has(call.endpoint)) return 'optional'
    return 'required'
  }

  // Not an async function: with the in-memory revocation list everything is synchronous, so the call
  // goes on without an extra promise and microtask. Errors still come back as a rejected promise.
  return function auth(call, next) {
    try {
      const mode = modeOf(call)
      if (mode === 'public') return next()
      const token = extractToken(call)
      if (token === undefined) {
        if (mode === 'optional') return next()
        throw new UnauthorizedException(AUTHENTICATION_REQUIRED)
      }
      if (!(revocation instanceof MemoryRevocationStore)) {
        return authenticateToken(tokens, revocation, token).then((claims) => {
          setUserContext(call, claims)
          return next()
        })
      }
      const claims = validatedClaims(tokens, token)
      if (revocation.containsSync(claims.jti)) throw new UnauthorizedException(TOKEN_REVOKED)
      setUserContext(call, claims)
      return next()
    } catch (err) {
      return Promise.reject(err)
    }
  }
}
