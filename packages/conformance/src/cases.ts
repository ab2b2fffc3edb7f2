// The one table of cases. Every transport must give the same result for each (the runner in
// test/conformance.test.ts drives them through @trivium/client).
import type { TokenKind } from './server.js'

export interface ExpectedError {
  kind: string
  code: string
  /** Exact message; omitted where transports legitimately word it differently (see `note`). */
  message?: string
  messagePattern?: RegExp
  retryAfter?: boolean
  details?: { field: string; message: string }[]
}

export interface UnaryCase {
  name: string
  endpoint: string
  token: TokenKind
  request: unknown
  /** Calls made first with the same client (e.g. to use up a rate limit). */
  warmup?: number
  expect: { value: unknown } | { error: ExpectedError }
  note?: string
}

const big = 9007199254740993n // 2^53 + 1: must survive every transport unrounded

export const unaryCases: UnaryCase[] = [
  {
    name: 'public endpoint, no token',
    endpoint: 'public.ping',
    token: 'none',
    request: {},
    expect: { value: { ok: true } },
  },
  {
    name: 'success: every field type round-trips',
    endpoint: 'echo',
    token: 'member',
    request: {
      text: 'héllo ✓',
      count: -7,
      at: new Date('2026-11-21T12:34:56.789Z'),
      blob: new Uint8Array([0, 1, 255]),
      big,
    },
    expect: {
      value: {
        text: 'héllo ✓',
        count: -7,
        at: new Date('2026-11-21T12:34:56.789Z'),
        blob: new Uint8Array([0, 1, 255]),
        big,
      },
    },
  },
  {
    name: 'validation error from the handler, with field details',
    endpoint: 'echo',
    token: 'member',
    request: { text: '   ', count: 1, at: null, blob: null, big: null },
    expect: {
      error: {
        kind: 'ValidationException',
        code: 'TRV_VALIDATION',
        message: 'Text must not be empty',
        details: [{ field: 'text', message: 'must not be empty' }],
      },
    },
  },
  {
    name: 'no token on a protected endpoint',
    endpoint: 'echo',
    token: 'none',
    request: { text: 'x', count: 1 },
    expect: {
      error: { kind: 'UnauthorizedException', code: 'TRV_UNAUTHORIZED', message: 'Authentication required' },
    },
  },
  {
    name: 'malformed token',
    endpoint: 'echo',
    token: 'bad',
    request: { text: 'x', count: 1 },
    expect: {
      error: { kind: 'UnauthorizedException', code: 'TRV_UNAUTHORIZED', messagePattern: /^Invalid token: / },
    },
  },
  {
    name: 'expired token',
    endpoint: 'echo',
    token: 'expired',
    request: { text: 'x', count: 1 },
    expect: {
      error: { kind: 'TokenExpiredException', code: 'TRV_TOKEN_EXPIRED', message: 'Token has expired' },
    },
  },
  {
    name: 'revoked token',
    endpoint: 'echo',
    token: 'revoked',
    request: { text: 'x', count: 1 },
    expect: {
      error: { kind: 'UnauthorizedException', code: 'TRV_UNAUTHORIZED', message: 'Token has been revoked' },
    },
  },
  {
    name: 'refresh token used as an access token',
    endpoint: 'echo',
    token: 'refresh',
    request: { text: 'x', count: 1 },
    expect: {
      error: {
        kind: 'UnauthorizedException',
        code: 'TRV_UNAUTHORIZED',
        message: 'Invalid token: Token validation failed: claim username is missing',
      },
    },
  },
  {
    name: 'forbidden: missing permission (any-of list)',
    endpoint: 'perm.only',
    token: 'member',
    request: {},
    expect: {
      error: {
        kind: 'ForbiddenException',
        code: 'TRV_FORBIDDEN',
        message: 'Insufficient permissions. Required: secret:read, secret:write',
      },
    },
  },
  {
    name: 'forbidden: missing role (any-of list)',
    endpoint: 'role.only',
    token: 'member',
    request: {},
    expect: {
      error: {
        kind: 'ForbiddenException',
        code: 'TRV_FORBIDDEN',
        message: 'Insufficient roles. Required: admin, auditor',
      },
    },
  },
  {
    name: 'allowed: one of the listed permissions and roles',
    endpoint: 'perm.only',
    token: 'admin',
    request: {},
    expect: { value: { ok: true } },
  },
  {
    name: 'rate limited after 2 calls, with retryAfter',
    endpoint: 'limited',
    token: 'member',
    request: {},
    warmup: 2,
    expect: {
      error: {
        kind: 'RateLimitExceededException',
        code: 'TRV_RATE_LIMITED',
        messagePattern: /^Rate limit exceeded\. Try again in (60|59) seconds$/,
        retryAfter: true,
      },
    },
  },
  {
    name: 'unknown endpoint',
    endpoint: 'missing.endpoint',
    token: 'member',
    request: {},
    expect: { error: { kind: 'NotFoundException', code: 'TRV_NOT_FOUND' } },
    note: 'HTTP names the route (`Route GET /missing not found`), frames the endpoint (`Unknown endpoint: missing.endpoint`)',
  },
]
