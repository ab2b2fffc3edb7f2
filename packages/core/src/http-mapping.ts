// The single rule that maps one request model onto an HTTP request and back (PROTOCOL.md "HTTP mapping"):
//   - fields named in the path (`/tasks/:id`) come from the path;
//   - GET and DELETE: every other field is a query parameter;
//   - POST and PUT: every other field is in the body.
// The HTTP parser uses `fromHttp`; a bridge that must build a URL for `inject` uses `toHttp`.
import { type HttpRequestParts, toHttpRequest } from '@trivium/wire'
import { ValidationException } from './errors.js'
import type { JsonSchema, Model } from './model.js'
import type { HttpMethod } from './registry.js'

export type { HttpRequestParts }

/** A JSON number (leading zeros allowed, as before): what a query or path value may spell for an integer. */
const NUMBER_TEXT = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/

type FieldKind = 'integer' | 'number' | 'boolean' | 'string' | 'array' | 'other'

export class HttpMapping {
  readonly pathParams: readonly string[]
  readonly hasBody: boolean
  private readonly kinds: Map<string, FieldKind>

  constructor(
    readonly method: HttpMethod,
    readonly url: string,
    model: Model,
  ) {
    this.pathParams = url
      .split('/')
      .filter((s) => s.startsWith(':'))
      .map((s) => s.slice(1))
    this.hasBody = method === 'POST' || method === 'PUT'
    this.kinds = new Map()
    const props = model.jsonSchema?.properties ?? {}
    for (const [field, schema] of Object.entries(props)) this.kinds.set(field, kindOf(schema))
  }

  /** `/tasks/:id` and `/tasks/:taskId` are the same route. */
  static normalizePath(url: string): string {
    return url
      .split('/')
      .map((s) => (s.startsWith(':') ? ':' : s))
      .join('/')
  }

  /** The JSON form of the request model from path params, query and (parsed JSON) body. */
  fromHttp(
    params: Record<string, string> | undefined,
    query: Record<string, unknown> | undefined,
    body: unknown,
  ): unknown {
    if (this.hasBody) {
      // No body (no Content-Type, or Content-Length: 0) is the empty model (PROTOCOL.md "Decoding rules").
      if (body === undefined) body = {}
      if (this.pathParams.length === 0) return body
      if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body)))
        return body
      const merged: Record<string, unknown> = { ...(body as Record<string, unknown> | undefined) }
      this.mergeScalars(merged, params, this.pathParams)
      return merged
    }
    const out: Record<string, unknown> = {}
    if (query) {
      // `for…in` with an own-key check: Object.keys' order and keys without its array per request.
      for (const key in query) {
        if (!Object.hasOwn(query, key)) continue
        // Only fields of the model: `token` and other transport parameters never reach the handler.
        if (this.kinds.size > 0 && !this.kinds.has(key)) continue
        out[key] = this.coerce(key, query[key])
      }
    }
    this.mergeScalars(out, params, this.pathParams)
    return out
  }

  /** Merges path parameters into an already decoded JSON form (binary bodies carry the whole model). */
  withPathParams(json: unknown, params: Record<string, string> | undefined): unknown {
    if (this.pathParams.length === 0 || typeof json !== 'object' || json === null) return json
    const merged = { ...(json as Record<string, unknown>) }
    this.mergeScalars(merged, params, this.pathParams)
    return merged
  }

  /** The HTTP request that carries a JSON-form request value (the rule in @trivium/wire, shared with the client). */
  toHttp(json: unknown): HttpRequestParts {
    return toHttpRequest(
      this.method,
      this.url,
      json,
      (field, message, summary) => new ValidationException(summary, [{ field, message }]),
    )
  }

  private mergeScalars(
    into: Record<string, unknown>,
    source: Record<string, string> | undefined,
    keys: readonly string[],
  ): void {
    if (!source) return
    for (const key of keys) {
      const v = source[key]
      if (v !== undefined) into[key] = this.coerce(key, v)
    }
  }

  // Query strings and paths are text: turn them into the type the model's schema declares, and
  // leave anything that does not convert as is so that the model's validation reports it.
  private coerce(key: string, raw: unknown): unknown {
    const kind = this.kinds.get(key)
    if (kind === 'array') return Array.isArray(raw) ? raw : [raw]
    if (Array.isArray(raw)) {
      // `?limit=1&limit=50`: a scalar given twice is refused, never resolved silently.
      throw new ValidationException(`Query parameter ${key} must be given once`, [
        { field: key, message: 'must be given once' },
      ])
    }
    const v = raw
    if (typeof v !== 'string') return v
    switch (kind) {
      case 'integer':
        // Number text becomes the number JSON.parse makes of it (beyond 2^53 rounded, beyond float range
        // Infinity), so the model answers as it does for a JSON body: `9007199254740993` or `1e21` in a
        // path is `must be a 32-bit integer` on every transport, `1.5` is `must be integer`.
        return NUMBER_TEXT.test(v) ? Number(v) : v
      case 'number': {
        const n = Number(v)
        return v.trim() !== '' && Number.isFinite(n) ? n : v
      }
      case 'boolean':
        return v === 'true' ? true : v === 'false' ? false : v
      default:
        return v
    }
  }
}

function kindOf(schema: JsonSchema | undefined): FieldKind {
  const t = schema?.type
  const type = Array.isArray(t) ? t.find((x) => x !== 'null') : t
  switch (type) {
    case 'integer':
    case 'number':
    case 'boolean':
    case 'string':
    case 'array':
      return type
    default:
      return 'other'
  }
}
