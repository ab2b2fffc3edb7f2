// Secrets out of request logs. A WebSocket upgrade carries its token in the query (browsers cannot
// set headers on it), so Fastify's default `req` serializer would write the whole credential in every
// `url`. `redactUrl` replaces the values of secret-bearing query parameters; `redactingRequestSerializer`
// is Fastify's default `req` serializer with that URL (use it as the logger's `serializers.req`).
import { SETUP } from './setup-errors.js'

/** Query parameters whose values are never logged (compared case-insensitively, after percent-decoding). */
export const SECRET_QUERY_PARAMETERS: readonly string[] = [
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'accesstoken',
  'refreshtoken',
  'api_key',
  'apikey',
  'password',
  'secret',
  'code',
]

export const REDACTED = '[REDACTED]'

function decodeName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' ')).toLowerCase()
  } catch {
    return raw.toLowerCase()
  }
}

/**
 * The URL with the value of every secret-bearing query parameter replaced by `[REDACTED]`
 * (`/ws?token=eyJ…&format=json` → `/ws?token=[REDACTED]&format=json`). Every occurrence is
 * redacted, whatever its spelling (`?TOKEN=`, `?to%6Ben=`).
 */
export function redactUrl(url: string, parameters: Iterable<string> = SECRET_QUERY_PARAMETERS): string {
  return url.includes('?') ? redactWith(url, nameSet(parameters)) : url
}

function nameSet(parameters: Iterable<string>): Set<string> {
  const names = new Set<string>()
  for (const p of parameters) {
    if (typeof p !== 'string' || p === '') throw SETUP.TRV_CORE_SECRET_QUERY()
    names.add(p.toLowerCase())
  }
  return names
}

function redactWith(url: string, secret: ReadonlySet<string>): string {
  const q = url.indexOf('?')
  if (q === -1) return url
  const parts = url.slice(q + 1).split('&')
  let changed = false
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]
    if (part === undefined) continue
    const eq = part.indexOf('=')
    if (eq === -1) continue
    if (secret.has(decodeName(part.slice(0, eq)))) {
      parts[i] = `${part.slice(0, eq + 1)}${REDACTED}`
      changed = true
    }
  }
  return changed ? `${url.slice(0, q + 1)}${parts.join('&')}` : url
}

function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

/** The fields of a request that Fastify's default serializer logs. */
interface LoggedRequest {
  method: string
  url: string
  headers?: Record<string, string | string[] | undefined>
  host?: string
  ip?: string
  socket?: { remotePort?: number | undefined } | null
}

export type SerializedRequest = {
  method: string
  url: string
  version: string | undefined
  host: string | undefined
  remoteAddress: string | undefined
  remotePort: number | undefined
}

/**
 * Fastify's default `req` log serializer with `redactUrl` applied:
 * `Fastify({ logger: { serializers: { req: redactingRequestSerializer() } } })`.
 * `parameters` replaces the default list (add yours to `SECRET_QUERY_PARAMETERS`).
 */
export function redactingRequestSerializer(
  parameters: Iterable<string> = SECRET_QUERY_PARAMETERS,
): (req: LoggedRequest) => SerializedRequest {
  const secret = nameSet(parameters)
  return (req) => ({
    method: req.method,
    url: redactWith(req.url, secret),
    version: firstValue(req.headers?.['accept-version']),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  })
}
