// PROTOCOL.md "HTTP mapping", the client's half: a request model's JSON form → method, path, query and
// body. The same rule as @trivium/core's `HttpMapping.toHttp`, re-implemented here because core is
// Node-only (it pulls @fastify/error) and this file must run in browsers.
import { ValidationException } from './errors.js'
import type { HttpMethod } from './types.js'

export interface HttpRequestParts {
  method: HttpMethod
  /** Path with parameters filled in and the query string appended. */
  url: string
  /** JSON-form body (the fields not in the path) for POST/PUT, undefined otherwise. */
  body: Record<string, unknown> | undefined
}

export function toHttp(method: HttpMethod, route: string, json: unknown): HttpRequestParts {
  const value: Record<string, unknown> =
    typeof json === 'object' && json !== null && !Array.isArray(json)
      ? { ...(json as Record<string, unknown>) }
      : {}
  const path = route
    .split('/')
    .map((segment) => {
      if (!segment.startsWith(':')) return segment
      const field = segment.slice(1)
      const v = value[field]
      if (v === undefined || v === null || typeof v === 'object') {
        throw new ValidationException(`Invalid request: ${field} is required`, [
          { field, message: 'is required' },
        ])
      }
      delete value[field]
      return encodeURIComponent(String(v))
    })
    .join('/')
  if (method === 'POST' || method === 'PUT') return { method, url: path, body: value }
  const search = new URLSearchParams()
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined || v === null) continue
    if (Array.isArray(v)) for (const item of v) search.append(key, String(item))
    else if (typeof v === 'object') {
      throw new ValidationException(`Invalid request: ${key} cannot be sent in a query string`, [
        { field: key, message: 'must be a scalar or a list of scalars' },
      ])
    } else search.append(key, String(v))
  }
  const qs = search.toString()
  return { method, url: qs ? `${path}?${qs}` : path, body: undefined }
}
