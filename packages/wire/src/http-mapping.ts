// PROTOCOL.md "HTTP mapping", one implementation for the server (@trivium/core's HttpMapping, used by
// the TCP inject bridge) and the client (browser-safe): a request model's JSON form → method, path
// (parameters filled in and encoded), query string (GET/DELETE) or body (POST/PUT).

export type HttpMethodName = 'GET' | 'POST' | 'PUT' | 'DELETE'

export interface HttpRequestParts {
  method: HttpMethodName
  /** Path with parameters filled in and the query string appended. */
  url: string
  /** JSON-form body (the fields not in the path) for POST/PUT, undefined otherwise. */
  body: Record<string, unknown> | undefined
}

/** Builds the caller's validation error for a field that cannot travel (each side has its own class). */
export type InvalidField = (field: string, message: string, summary: string) => Error

export function toHttpRequest(
  method: HttpMethodName,
  route: string,
  json: unknown,
  invalid: InvalidField,
): HttpRequestParts {
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
        throw invalid(field, 'is required', `Invalid request: ${field} is required`)
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
      throw invalid(
        key,
        'must be a scalar or a list of scalars',
        `Invalid request: ${key} cannot be sent in a query string`,
      )
    } else search.append(key, String(v))
  }
  const qs = search.toString()
  return { method, url: qs ? `${path}?${qs}` : path, body: undefined }
}
