// Where a transport finds the caller's credential (PROTOCOL.md "Authentication"): HTTP reads the
// `Authorization: Bearer` header then the `token` query parameter; a WebSocket upgrade reads the query
// then the header; frames read the metadata key `auth_token`. Transports hand one of these to
// `CallInit.credential`, so authentication never looks at protocol names.

import { CREDENTIAL_METADATA_KEY } from '@trivium/wire'
import type { HeaderMap } from './call.js'
import { UnauthorizedException } from './errors.js'

/** A credential given more than once (`?token=a&token=b`) is refused on every transport. */
export const REPEATED_CREDENTIAL = 'Invalid token: the token is given more than once'

/** The metadata key of a frame's credential (one spelling for servers and clients: @trivium/wire). */
export { CREDENTIAL_METADATA_KEY }

function single(value: unknown): string | undefined {
  if (Array.isArray(value)) {
    if (value.length > 1) throw new UnauthorizedException(REPEATED_CREDENTIAL)
    value = value[0]
  }
  return typeof value === 'string' && value.length > 0 ? value : undefined
}

/** `Bearer <token>`: the scheme in any case (RFC 9110 §11.1), one space, then the token. */
function bearer(headers: HeaderMap): string | undefined {
  const header = single(headers.authorization)
  if (header === undefined || header.length < 8) return undefined
  if (!header.startsWith('Bearer ') && header.slice(0, 7).toLowerCase() !== 'bearer ') return undefined
  const token = header.slice(7).trim()
  return token.length > 0 ? token : undefined
}

function queryToken(query: Record<string, unknown> | undefined): string | undefined {
  return query === undefined ? undefined : single(query.token)
}

/** HTTP: the Authorization header, then the `token` query parameter. */
export function httpCredential(headers: HeaderMap, query?: Record<string, unknown>): string | undefined {
  // A repeated query token is refused even when the header wins: one rule, whatever else is sent.
  const fromQuery = queryToken(query)
  return bearer(headers) ?? fromQuery
}

/** WebSocket upgrade: the `token` query parameter, then the Authorization header. */
export function websocketCredential(headers: HeaderMap, query?: Record<string, unknown>): string | undefined {
  return queryToken(query) ?? bearer(headers)
}

/** Frames (TCP, and WebSocket REQUEST metadata): the metadata key `auth_token`. */
export function metadataCredential(metadata: Record<string, string> | undefined): string | undefined {
  return metadata === undefined ? undefined : single(metadata[CREDENTIAL_METADATA_KEY])
}
