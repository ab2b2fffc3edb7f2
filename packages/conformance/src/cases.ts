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
  /** Formats that can carry the request (default: every format of the transport). */
  formats?: ('json' | 'binary')[]
}

const INT32 = 'must be a 32-bit integer'
const LONE = 'must not contain a lone surrogate (a \\uD800-\\uDFFF escape without its pair)'
/** Only JSON can carry these requests: the binary writer refuses a non-int32 (EncodeError) before sending. */
const JSON_ONLY: ('json' | 'binary')[] = ['json']

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
  {
    name: 'path and query parameters are converted as in a JSON body',
    endpoint: 'lookup',
    token: 'member',
    request: { id: 7, limit: -2 },
    expect: { value: { id: 7, limit: -2 } },
  },
  {
    name: 'an int32 path parameter beyond 2^53 is a 32-bit error',
    endpoint: 'lookup',
    token: 'member',
    request: { id: 2 ** 53, limit: null },
    formats: JSON_ONLY,
    expect: {
      error: {
        kind: 'ValidationException',
        code: 'TRV_VALIDATION',
        message: `Invalid Lookup: id ${INT32}`,
        details: [{ field: 'id', message: INT32 }],
      },
    },
  },
  {
    name: 'an int32 query parameter in exponent notation beyond int32 is a 32-bit error',
    endpoint: 'lookup',
    token: 'member',
    request: { id: 1, limit: 1e21 },
    formats: JSON_ONLY,
    expect: {
      error: {
        kind: 'ValidationException',
        code: 'TRV_VALIDATION',
        message: `Invalid Lookup: limit ${INT32}`,
        details: [{ field: 'limit', message: INT32 }],
      },
    },
  },
  {
    name: 'an int32 body field beyond int32 is a 32-bit error',
    endpoint: 'echo',
    token: 'member',
    request: { text: 'x', count: 2 ** 31 },
    formats: JSON_ONLY,
    expect: {
      error: {
        kind: 'ValidationException',
        code: 'TRV_VALIDATION',
        message: `Invalid Echo: count ${INT32}`,
        details: [{ field: 'count', message: INT32 }],
      },
    },
  },
  {
    name: 'a lone surrogate in a JSON string is refused, naming the field',
    endpoint: 'echo',
    token: 'member',
    request: { text: 'a\ud800b', count: 1 },
    // The binary format cannot carry one: its strings are strict UTF-8 (a surrogate's bytes are invalid).
    formats: JSON_ONLY,
    expect: {
      error: {
        kind: 'ValidationException',
        code: 'TRV_VALIDATION',
        message: `Invalid Echo: text ${LONE}`,
        details: [{ field: 'text', message: LONE }],
      },
    },
  },
  {
    name: 'a surrogate pair (a character beyond U+FFFF) is text like any other',
    endpoint: 'echo',
    token: 'member',
    request: { text: 'a\ud83d\ude00b', count: 1 },
    expect: { value: { text: 'a😀b', count: 1 } },
  },
]

// ---- Compression (issue 34 item 2; PROTOCOL.md "Compression") ----------------------------------------
// Run by test/compression.test.ts, after the whole table above, against servers with compression on
// every transport and clients that negotiate it; that runner also checks bytes on the wire.

/** A large, repetitive text (as task lists are): deflate shrinks it well below a tenth. */
export const COMPRESSIBLE_TEXT = Array.from(
  { length: 2000 },
  (_, i) => `task ${i}: write the quarterly report; `,
).join('')

/** Over the 1 MiB body limit once inflated, a few KiB compressed. */
export const INFLATES_PAST_LIMIT = 'a'.repeat(2 * 1024 * 1024)

export const compressionCases: UnaryCase[] = [
  {
    name: 'compression: a large request and its answer round-trip compressed',
    endpoint: 'echo',
    token: 'member',
    request: { text: COMPRESSIBLE_TEXT, count: 2000 },
    expect: { value: { text: COMPRESSIBLE_TEXT, count: 2000 } },
  },
  {
    name: 'compression: a body under the threshold or incompressible travels as it is',
    endpoint: 'echo',
    token: 'member',
    request: { text: 'q', count: 1 },
    expect: { value: { text: 'q', count: 1 } },
  },
]
