// The HTTP request a bridged frame becomes (route-bridge.ts): the URL, body and headers built from the
// frame's decoded payload through the registry's HTTP mapping, never from the frame's text.
import type { EndpointDefinition, WireFormat } from '@trivium/core'
import { decodeRequest, isThenable, jsonFormat, type TransportOverride } from '@trivium/core/internal'

/** The HTTP request a decoded frame payload maps to. */
export interface HttpForm {
  url: string
  body: Buffer | undefined
  contentType: string | undefined
}

/**
 * The frame's payload decoded by the frame rules (as direct mode does: core's `decodeRequest`, where
 * zero bytes are the empty model, and the same refusal of a format the endpoint has no codec for), then
 * the HTTP request carrying it: the original bytes when they are the whole body, else the URL/body
 * `toHttp` builds from the model.
 */
export function httpFormOf(
  definition: EndpointDefinition,
  format: WireFormat,
  payload: Uint8Array,
): HttpForm | PromiseLike<HttpForm> {
  const value = decodeRequest(definition.name, format, definition.request, payload, definition.response)
  // An asynchronous model: the form is built once its checks have settled.
  if (isThenable(value)) return value.then((settled) => formOf(definition, payload, format, settled))
  return formOf(definition, payload, format, value)
}

function formOf(
  definition: EndpointDefinition,
  payload: Uint8Array,
  format: WireFormat,
  value: unknown,
): HttpForm {
  const model = definition.request
  const mapping = definition.http
  if (mapping.hasBody && mapping.pathParams.length === 0) {
    // The decode proved the bytes valid: they go through as they are (no re-encoding).
    if (payload.length === 0) return { url: mapping.url, body: undefined, contentType: undefined }
    return {
      url: mapping.url,
      body: Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength),
      contentType: format.contentType,
    }
  }
  const json = model.toJSON(value)
  if (mapping.pathParams.length === 0 && !mapping.hasBody && isEmptyObject(json)) {
    return { url: mapping.url, body: undefined, contentType: undefined }
  }
  const parts = mapping.toHttp(json)
  if (parts.body === undefined) return { url: parts.url, body: undefined, contentType: undefined }
  return {
    url: parts.url,
    body: Buffer.from(JSON.stringify(parts.body)),
    contentType: jsonFormat.contentType,
  }
}

/**
 * The request's headers: the formats, and for a frame that carries a credential (a named route's call)
 * `Authorization: Bearer …`, as an HTTP client sends it, so the route's own hooks (@fastify/jwt,
 * @fastify/auth) read it where they always do.
 */
export function requestHeaders(
  form: HttpForm,
  accept: WireFormat,
  override: TransportOverride,
): Record<string, string> {
  const headers: Record<string, string> = { accept: accept.contentType }
  if (form.contentType !== undefined) {
    headers['content-type'] = form.contentType
    headers['content-length'] = String(form.body?.length ?? 0)
  }
  if (override.credential !== undefined) headers.authorization = `Bearer ${override.credential}`
  return headers
}

/**
 * `[name, value, …]` in the headers' order, as `Object.entries(headers).flat()` gives; a loop, since that
 * pair of builtins cost ~3,500 instructions a call (bench/transports/server-instructions.mjs).
 */
export function rawHeadersOf(headers: Record<string, string>): string[] {
  const raw: string[] = []
  for (const name in headers) raw.push(name, headers[name] as string)
  return raw
}

function isEmptyObject(json: unknown): boolean {
  if (json === undefined || json === null) return true
  if (typeof json !== 'object') return false
  for (const key in json) if ((json as Record<string, unknown>)[key] !== undefined) return false
  return true
}
