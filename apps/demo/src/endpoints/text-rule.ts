// The demo's one rule for text: no request string may contain U+0000. PostgreSQL `text` cannot hold it
// (the insert fails with "invalid byte sequence", a 500), and no field of this service needs it, so every
// string of every request model is checked once, in a middleware: the same 400 on HTTP, WebSocket and
// TCP, in both formats, before a handler or the database sees the value. Stated in PROTOCOL.md.
import { type Middleware, ValidationException } from '@trivium/core'

export const NUL_MESSAGE = 'must not contain the NUL character (U+0000)'

/** The path of the first string holding U+0000 (`title`, `tags[2]`, `task.title`), or undefined. */
export function findNul(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined
  if (value === null || typeof value !== 'object') return undefined
  if (ArrayBuffer.isView(value) || value instanceof Date) return undefined
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNul(value[i], `${path}[${i}]`)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (value instanceof Map) {
    for (const [key, item] of value) {
      const at = `${path}[${String(key)}]`
      if (typeof key === 'string' && key.includes('\u0000')) return at
      const found = findNul(item, at)
      if (found !== undefined) return found
    }
    return undefined
  }
  for (const key of Object.keys(value)) {
    const found = findNul((value as Record<string, unknown>)[key], path ? `${path}.${key}` : key)
    if (found !== undefined) return found
  }
  return undefined
}

/** A value of `model` holding U+0000 in any string is a ValidationException naming the field. */
export function refuseNulIn(model: string | undefined, value: unknown): void {
  const field = findNul(value)
  if (field !== undefined) {
    throw new ValidationException(`Invalid ${model}: ${field || '(body)'} ${NUL_MESSAGE}`, [
      { field: field || '(body)', message: NUL_MESSAGE },
    ])
  }
}

/**
 * Middleware: a request whose model holds U+0000 in any string is a ValidationException naming the field.
 * (A stream of requests has no body here: its handler checks each item with `refuseNulIn`.)
 */
export const refuseNulText: Middleware = (call, next) => {
  // A guarded plain route has no request model: its body is named as such.
  refuseNulIn(call.definition.kind === 'endpoint' ? call.definition.request.name : 'request body', call.body)
  return next()
}
