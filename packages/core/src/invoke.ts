// The transport-neutral entry for adapters that receive frames (WebSocket, TCP direct mode):
// parser → middleware → router → handler, with the result handed back for the adapter to serialize.
import type { FastifyBaseLogger } from 'fastify'
import { type HeaderMap, type IdentityListener, type Protocol, TriviumCall } from './call.js'
import { type CallDeadline, callDeadline } from './deadline.js'
import { NotFoundException } from './errors.js'
import { decodeRequest, refuseAnswerFormat, type WireFormat } from './formats.js'
import type { Pipeline } from './middleware.js'
import type { EndpointDefinition, EndpointRegistry } from './registry.js'
import { routeToHandler } from './router.js'

export interface InvokeInit {
  endpoint: string
  protocol: Protocol
  /** The frame's payload bytes, in `format`. */
  payload: Uint8Array
  format: WireFormat
  requestId: string
  log: FastifyBaseLogger
  headers?: HeaderMap
  query?: Record<string, unknown>
  metadata?: Record<string, string>
  /**
   * `metadata`'s `timeout_ms` entry when the transport read it with the block (null: none), so that a
   * repeated block is not read again per call; absent: read from `metadata`.
   */
  timeout?: string | null
  clientIp?: string
  /** Cancellation: a signal, or a function that makes one on first use (saves an AbortController per call). */
  signal?: AbortSignal | (() => AbortSignal)
  connection?: Record<string, unknown>
  /** The caller's credential (see CallInit.credential); absent: the protocol's default place. */
  credential?: string | (() => string | undefined)
  /** A client or bidirectional stream's request items, fed by the transport. */
  requests?: AsyncIterable<unknown>
  /** Told when authentication sets the call's identity (see CallInit.onIdentity). */
  onIdentity?: IdentityListener
}

export interface InvokeResult {
  definition: EndpointDefinition
  call: TriviumCall<any>
  /** The handler's value (unary) or the AsyncIterable of items (streaming). */
  result: unknown
}

export interface StartedCall {
  call: TriviumCall<any>
  /** The handler's value (unary) or AsyncIterable (streaming), or a promise of it. */
  result: unknown
}

export class Invoker {
  constructor(
    private readonly registry: EndpointRegistry,
    private readonly pipeline: Pipeline,
  ) {}

  /** Parser step for frames: builds the common request form. Unknown endpoint → NotFoundException. */
  parse(init: InvokeInit): TriviumCall<any> {
    const definition = this.registry.get(init.endpoint)
    if (!definition) throw new NotFoundException(`Unknown endpoint: ${init.endpoint}`)
    return this.#make(
      init,
      definition,
      callDeadline(init.protocol, init.headers, init.metadata, definition.timeoutMs, init.timeout),
    )
  }

  #make(
    init: InvokeInit,
    definition: EndpointDefinition,
    deadline: CallDeadline | undefined,
  ): TriviumCall<any> {
    const { payload, format } = init
    return new TriviumCall({
      deadline,
      definition,
      protocol: init.protocol,
      requestId: init.requestId,
      log: init.log,
      headers: init.headers,
      query: init.query,
      metadata: init.metadata,
      clientIp: init.clientIp,
      signal: init.signal,
      connection: init.connection,
      credential: init.credential,
      requests: init.requests,
      onIdentity: init.onIdentity,
      decodeBody: () => {
        // A stream of requests has no request model in its REQUEST: the items carry them.
        if (definition.requestStream) {
          refuseAnswerFormat(definition.name, definition.response, format)
          return undefined
        }
        return decodeRequest(definition.name, format, definition.request, payload, definition.response)
      },
    })
  }

  /**
   * Parses and starts a call: the pipeline runs as far as it can synchronously. `result` is the
   * handler's value or a promise of it; parse errors throw here. Frame transports await only `result`
   * (one promise and one microtask fewer per call than `invoke`).
   */
  start(init: InvokeInit): StartedCall {
    const definition = this.registry.get(init.endpoint)
    if (!definition) throw new NotFoundException(`Unknown endpoint: ${init.endpoint}`)
    const deadline = callDeadline(
      init.protocol,
      init.headers,
      init.metadata,
      definition.timeoutMs,
      init.timeout,
    )
    const call = this.#make(init, definition, deadline)
    return { call, result: this.pipeline.run(call, routeToHandler, deadline) }
  }

  async invoke(init: InvokeInit): Promise<InvokeResult> {
    const { call, result } = this.start(init)
    return { definition: call.definition, call, result: await result }
  }
}

/** Serializer step for frames: a response value (or stream item) as bytes in the connection's format. */
export function encodePayload(
  definition: EndpointDefinition,
  format: WireFormat,
  value: unknown,
): Uint8Array {
  const out = format.encode(definition.response, value)
  return typeof out === 'string' ? Buffer.from(out, 'utf8') : out
}
