// Shared by the inject-mode tests: one app whose Fastify hooks record what they see, the inject bridge
// called directly (lean path and forced app.inject() path), and a normalised outcome to compare paths.
import type { EndpointDefinition } from '@trivium/core'
import { jsonFormat, type TransportOverride } from '@trivium/core/internal'
import { Cancellation } from '@trivium/wire'
import type { FastifyInstance } from 'fastify'
import { InjectBridge, type InjectOutcome } from '../dist/inject.js'

// @fastify/helmet and @fastify/cors are the app's own plugins here (devDependencies).
export { default as cors } from '@fastify/cors'
export { default as helmet } from '@fastify/helmet'
export { InjectBridge, type InjectOutcome }

export const tick = () => new Promise<void>((r) => setImmediate(r))

export function tcpOverride(): TransportOverride {
  return { protocol: 'tcp', metadata: {}, clientIp: '127.0.0.1', connection: {} }
}

export function definitionOf(app: FastifyInstance, name: string): EndpointDefinition {
  const definition = app.trivium.registry.get(name)
  if (!definition) throw new Error(`no endpoint ${name}`)
  return definition
}

export function bridgeCall(
  bridge: InjectBridge,
  app: FastifyInstance,
  name: string,
  body?: unknown,
  entry = new Cancellation(false),
): Promise<InjectOutcome> {
  const payload =
    body === undefined
      ? new Uint8Array(0)
      : body instanceof Uint8Array
        ? body
        : new TextEncoder().encode(JSON.stringify(body))
  const definition = definitionOf(app, name)
  const override = tcpOverride()
  return bridge.call({
    definition,
    format: jsonFormat,
    accept: jsonFormat,
    payload,
    override,
    entry,
    requestId: 'c1:1',
  })
}

/** A body without the per-request id (each path has its own). */
export function withoutRequestId(text: string): unknown {
  if (text === '') return ''
  try {
    const parsed = JSON.parse(text)
    if (parsed && typeof parsed === 'object') delete parsed.requestId
    return parsed
  } catch {
    return text
  }
}
