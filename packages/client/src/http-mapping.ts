// PROTOCOL.md "HTTP mapping", the client's half: the one implementation in @trivium/wire, raising the
// client's own ValidationException.
import { type HttpRequestParts, toHttpRequest } from '@trivium/wire'
import { ValidationException } from './errors.js'
import type { HttpMethod } from './types.js'

export type { HttpRequestParts }

export function toHttp(method: HttpMethod, route: string, json: unknown): HttpRequestParts {
  return toHttpRequest(
    method,
    route,
    json,
    (field, message, summary) => new ValidationException(summary, [{ field, message }]),
  )
}
