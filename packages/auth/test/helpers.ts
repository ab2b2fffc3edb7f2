import { createHmac } from 'node:crypto'
import triviumAuth, { type TriviumAuthOptions } from '@trivium/auth'
import trivium, { type Protocol } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import type { SqlClient } from '@trivium/sql'
import Fastify, { type FastifyInstance } from 'fastify'
import tap from 'tap'

export const SECRET = 'test-secret-0123456789-abcdefghijklmnop'
export const ISSUER = 'trivium-test'

export function b64url(value: unknown): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')
}

/** Hand-made JWT: any header, any payload, HMAC with `alg` (sha256/sha384/sha512) or an explicit signature. */
export function craft(
  header: Record<string, unknown>,
  payload: unknown,
  options: { secret?: string; hmac?: 'sha256' | 'sha384' | 'sha512'; signature?: string } = {},
): string {
  const input = `${b64url(header)}.${b64url(payload)}`
  const signature =
    options.signature ??
    createHmac(options.hmac ?? 'sha256', options.secret ?? SECRET)
      .update(input)
      .digest('base64url')
  return `${input}.${signature}`
}

/** A clock the test moves by hand (ms since epoch). */
export function manualClock(startMs = 1_700_000_000_000) {
  let now = startMs
  const clock = () => now
  clock.set = (ms: number) => {
    now = ms
  }
  clock.advance = (ms: number) => {
    now += ms
  }
  clock.seconds = () => Math.floor(now / 1000)
  return clock
}

export function accessPayload(
  nowSec: number,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    iss: ISSUER,
    sub: '7',
    aud: 'platform-api',
    exp: nowSec + 3600,
    iat: nowSec,
    nbf: nowSec,
    jti: `${nowSec * 1000}_abcdEFGH`,
    user_id: 7,
    username: 'alice',
    email: 'alice@example.com',
    roles: ['admin'],
    permissions: ['users.read'],
    token_type: 'access',
    ...overrides,
  }
}

export function decodePayload(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'))
}

export function decodeHeader(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8'))
}

/** The user most tests issue tokens for. */
export const alice = {
  id: 7,
  username: 'alice',
  email: 'alice@example.com',
  roles: ['admin'],
  permissions: ['users.read'],
}

/** Fastify with core and auth registered (not ready): `options` go to @trivium/auth. */
export async function authApp(options: Partial<TriviumAuthOptions> = {}) {
  const app = Fastify()
  await app.register(trivium)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER, ...options })
  return app
}

/** Calls endpoint `me` as a frame transport would (`extra`: query, headers, metadata, credential…). */
export function invokeMe(app: FastifyInstance, protocol: Protocol, extra: Record<string, unknown>) {
  return app.trivium.invoke({
    endpoint: 'me',
    protocol,
    payload: new TextEncoder().encode('{}'),
    format: jsonFormat,
    requestId: 'c1:1',
    log: app.log,
    ...extra,
  })
}

let pgliteClient: Promise<SqlClient> | undefined
/**
 * The test file's one in-memory PGlite, emptied for each test (its public schema dropped and made again, as in
 * @trivium/sql's test helpers): each connectPglite() is an initdb in WebAssembly, ~5 s of CPU. For tests that run
 * one after another, each on one database at a time; closed when the file ends.
 */
export async function freshPglite(): Promise<SqlClient> {
  if (pgliteClient === undefined) {
    pgliteClient = import('@trivium/sql').then(({ connectPglite }) => connectPglite())
    tap.teardown(async () => (await pgliteClient)?.close())
  }
  const client = await pgliteClient
  await client.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public; SET search_path TO public')
  return client
}
