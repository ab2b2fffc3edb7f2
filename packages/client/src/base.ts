// What every transport shares: the endpoint table, events and state, the token provider with
// refresh-and-retry-once, per-call deadlines and abort signals.

import type { Contract } from '@trivium/contract'
import { MAX_TIMEOUT_MS } from '@trivium/wire'
import { contractEndpoints, type DeriveBinaryForm } from './contract.js'
import {
  ConflictException,
  NetworkException,
  NotFoundException,
  ServiceUnavailableException,
  TimeoutException,
  TokenExpiredException,
  TriviumError,
  toClientError,
} from './errors.js'
import type {
  BidiStreamCall,
  CallOptions,
  ClientEvents,
  ClientStreamCall,
  CommonClientOptions,
  ConnectionState,
  EndpointSpec,
  EndpointTable,
  PayloadFormat,
  StreamOptions,
  TokenProvider,
  TriviumClient,
} from './types.js'

export const DEFAULT_TIMEOUT_MS = 30_000
export const DEFAULT_RETRY_DELAY_MS = 200

/**
 * A new idempotency key: a random (version 4) UUID. Browsers offer `crypto.randomUUID` only in secure
 * contexts; `getRandomValues` everywhere.
 */
export function newIdempotencyKey(): string {
  const crypto = globalThis.crypto
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID()
  const b = crypto.getRandomValues(new Uint8Array(16))
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x40
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** Failures after which the call may run again with the same key: nothing was answered, or it said so. */
function retryable(error: unknown): boolean {
  return (
    error instanceof NetworkException ||
    error instanceof ServiceUnavailableException ||
    error instanceof ConflictException
  )
}

export function optionError(message: string): TypeError {
  return new TypeError(`@trivium/client: ${message}`)
}

/**
 * The timeout a request carries (PROTOCOL.md "Deadlines"): the ms left until `deadlineAt` (Date.now()
 * time), at least 1 and at most MAX_TIMEOUT_MS; undefined without a deadline.
 */
export function timeoutToSend(deadlineAt: number | undefined): string | undefined {
  if (deadlineAt === undefined) return undefined
  return String(Math.min(MAX_TIMEOUT_MS, Math.max(1, Math.ceil(deadlineAt - Date.now()))))
}

export function checkNonNegative(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback
  if (typeof v !== 'number' || Number.isNaN(v) || v < 0) throw optionError(`${name} must be a number >= 0`)
  return v
}

export function hasBinary(spec: EndpointSpec): boolean {
  return (
    typeof spec.request.encode === 'function' &&
    typeof spec.request.decode === 'function' &&
    typeof spec.response.encode === 'function' &&
    typeof spec.response.decode === 'function'
  )
}

/** The table with a contract's endpoints added; a name in both is refused (which one would be meant?). */
function withContract(table: EndpointTable, contract: Contract, derive: unknown): EndpointTable {
  if (derive !== undefined && typeof derive !== 'function') {
    throw optionError("deriveBinary must be @trivium/codec's deriveBinaryForm (a function)")
  }
  const endpoints = contractEndpoints(contract, derive as DeriveBinaryForm | undefined) // a malformed contract: ContractError (TRV_CONTRACT)
  for (const name of Object.keys(endpoints)) {
    if (Object.hasOwn(table, name)) throw optionError(`endpoint ${name} is both in endpoints and in contract`)
  }
  return { ...table, ...endpoints }
}

type Listeners = { [E in keyof ClientEvents]: Set<ClientEvents[E]> }

export abstract class BaseClient implements TriviumClient {
  abstract readonly transport: 'http' | 'websocket' | 'tcp'
  protected readonly endpoints: Map<string, EndpointSpec>
  protected readonly timeoutMs: number
  /** The client's `timeoutMs` was given (not the default): a deadline the caller asked for. */
  private readonly timeoutGiven: boolean
  /**
   * HTTP (bound by CORS in browsers) sends a deadline or an idempotency key only when the caller asks for
   * one, so that default calls need no header the spec's default CORS does not allow; WebSocket and TCP
   * carry both in frame metadata by default.
   */
  protected readonly sendsOnlyWhenAsked: boolean = false
  private readonly retries: number
  private readonly retryDelayMs: number
  protected readonly format: PayloadFormat | undefined
  protected tokenSource: TokenProvider | undefined
  private readonly refreshFn: (() => Promise<string>) | undefined
  private refreshing: Promise<string> | undefined
  private readonly listeners: Listeners = {
    connected: new Set(),
    disconnected: new Set(),
    error: new Set(),
    stateChange: new Set(),
  }
  private currentState: ConnectionState = 'idle'

  constructor(options: CommonClientOptions) {
    this.endpoints = new Map()
    const given: EndpointTable = options.endpoints ?? {}
    if (typeof given !== 'object' || given === null) throw optionError('endpoints must be an object')
    if (options.contract === undefined && options.deriveBinary !== undefined)
      throw optionError('deriveBinary derives the binary forms of a contract: give contract too')
    const table =
      options.contract === undefined ? given : withContract(given, options.contract, options.deriveBinary)
    for (const [key, spec] of Object.entries(table)) {
      if (!spec || typeof spec.name !== 'string' || !spec.request || !spec.response) {
        throw optionError(`endpoints.${key} must have a name, a request model and a response model`)
      }
      this.endpoints.set(key, spec)
      this.endpoints.set(spec.name, spec)
    }
    this.timeoutMs = checkNonNegative('timeoutMs', options.timeoutMs, DEFAULT_TIMEOUT_MS)
    this.timeoutGiven = options.timeoutMs !== undefined
    this.retries = checkNonNegative('retries', options.retries, 0)
    this.retryDelayMs = checkNonNegative('retryDelayMs', options.retryDelayMs, DEFAULT_RETRY_DELAY_MS)
    if (options.format !== undefined && options.format !== 'binary' && options.format !== 'json') {
      throw optionError("format must be 'binary' or 'json'")
    }
    this.format = options.format
    if (
      options.token !== undefined &&
      typeof options.token !== 'string' &&
      typeof options.token !== 'function'
    ) {
      throw optionError('token must be a string or a function')
    }
    this.tokenSource = options.token
    if (options.refresh !== undefined && typeof options.refresh !== 'function') {
      throw optionError('refresh must be a function')
    }
    this.refreshFn = options.refresh
    if (
      options.traceparent !== undefined &&
      typeof options.traceparent !== 'string' &&
      typeof options.traceparent !== 'function'
    ) {
      throw optionError('traceparent must be a string or a function')
    }
    this.traceparentSource = options.traceparent
  }

  private readonly traceparentSource: string | (() => string | undefined) | undefined

  /** The `traceparent` to send now, if any. */
  protected currentTraceparent(): string | undefined {
    const source = this.traceparentSource
    return typeof source === 'function' ? source() : source
  }

  get state(): ConnectionState {
    return this.currentState
  }

  protected setState(state: ConnectionState): void {
    if (state === this.currentState) return
    this.currentState = state
    this.emit('stateChange', state)
  }

  on<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): () => void {
    const set: Set<ClientEvents[E]> = this.listeners[event]
    set.add(listener)
    return () => {
      set.delete(listener)
    }
  }
  onConnected(listener: ClientEvents['connected']): () => void {
    return this.on('connected', listener)
  }
  onDisconnected(listener: ClientEvents['disconnected']): () => void {
    return this.on('disconnected', listener)
  }
  onError(listener: ClientEvents['error']): () => void {
    return this.on('error', listener)
  }

  protected emit<E extends keyof ClientEvents>(event: E, ...args: Parameters<ClientEvents[E]>): void {
    for (const listener of this.listeners[event]) {
      try {
        ;(listener as (...a: unknown[]) => void)(...args)
      } catch {
        // A listener's own failure must not break the connection logic.
      }
    }
  }

  setToken(token: TokenProvider | undefined): void {
    this.tokenSource = token
  }

  protected async currentToken(): Promise<string | undefined> {
    const source = this.tokenSource
    if (source === undefined) return undefined
    const value = typeof source === 'function' ? await source() : source
    return value ?? undefined
  }

  /** One refresh at a time; concurrent failures share it. */
  protected refreshToken(): Promise<string> {
    if (!this.refreshFn) return Promise.reject(new Error('no refresh function'))
    if (!this.refreshing) {
      const fn = this.refreshFn
      this.refreshing = (async () => {
        try {
          const token = await fn()
          this.tokenSource = token
          await this.tokenRefreshed()
          return token
        } finally {
          this.refreshing = undefined
        }
      })()
    }
    return this.refreshing
  }

  /** Hook for transports whose token is fixed per connection (WebSocket reconnects). */
  protected async tokenRefreshed(): Promise<void> {}

  protected resolveEndpoint(
    endpoint: string | EndpointSpec,
    streaming: boolean,
    requestStream = false,
  ): EndpointSpec {
    const spec = typeof endpoint === 'string' ? this.endpoints.get(endpoint) : endpoint
    if (!spec)
      throw new NotFoundException(`Endpoint ${String(endpoint)} is not in the client's endpoint table`)
    if ((spec.requestStream === true) !== requestStream || (requestStream && spec.streaming !== streaming)) {
      const use = spec.requestStream
        ? spec.streaming
          ? 'bidiStream()'
          : 'clientStream()'
        : spec.streaming
          ? 'stream()'
          : 'call()'
      throw usageError(
        spec.requestStream
          ? `Endpoint ${spec.name} takes a stream of requests: use ${use}`
          : `Endpoint ${spec.name} does not take a stream of requests: use ${use}`,
      )
    }
    if (spec.streaming !== streaming) {
      throw new TriviumError(
        streaming
          ? `Endpoint ${spec.name} is not a streaming endpoint: use call()`
          : `Endpoint ${spec.name} is a streaming endpoint: use stream()`,
        'TRV_CLIENT_USAGE',
        400,
        'ClientUsageError',
      )
    }
    return spec
  }

  // `any`: a call by name the client's type cannot see is read without a cast (a spec or contract types it)
  async call<Res = any>(
    endpoint: string | EndpointSpec<unknown, Res>,
    request?: unknown,
    options: CallOptions = {},
  ): Promise<Res> {
    const spec = this.resolveEndpoint(endpoint, false)
    const timeoutMs = checkNonNegative('timeoutMs', options.timeoutMs, this.timeoutMs)
    const always = !this.sendsOnlyWhenAsked
    // One key per logical call, the same on every attempt (a refresh retry or a retry below). Over HTTP a
    // generated key is what makes `retries` safe, so it is sent when there are retries.
    const generateKey = spec.method === 'POST' && (always || this.retries > 0)
    const key = options.idempotencyKey ?? (generateKey ? newIdempotencyKey() : undefined)
    // Each attempt has its own deadline, sent with it so that the server stops at the same moment (over
    // HTTP only a deadline the caller set; the default one is this client's timer alone).
    const sendDeadline = always || options.timeoutMs !== undefined || this.timeoutGiven
    const attempt = () => {
      const deadlineAt = timeoutMs > 0 && sendDeadline ? Date.now() + timeoutMs : undefined
      return withDeadline(spec, timeoutMs, options.signal, (signal) =>
        this.doCall(spec, request, signal, key, deadlineAt),
      )
    }
    let refreshed = false
    for (let retry = 0; ; ) {
      try {
        return (await attempt()) as Res
      } catch (err) {
        const error = toClientError(err)
        if (error instanceof TokenExpiredException && this.refreshFn && !refreshed) {
          refreshed = true
          await this.refreshToken()
          continue
        }
        if (retry >= this.retries || !retryable(error) || this.state === 'closed' || options.signal?.aborted)
          throw error
        await new Promise((resolve) => setTimeout(resolve, this.retryDelayMs * 2 ** retry))
        retry++
      }
    }
  }

  // `any`: as for call(), an item of a stream by name is read without a cast
  stream<Item = any>(
    endpoint: string | EndpointSpec<unknown, Item>,
    request?: unknown,
    options: StreamOptions = {},
  ): AsyncIterable<Item> {
    const spec = this.resolveEndpoint(endpoint, true)
    // No client-wide default: streams such as subscriptions run for as long as the caller wants.
    const timeoutMs = checkNonNegative('timeoutMs', options.timeoutMs, 0)
    const self = this
    return {
      [Symbol.asyncIterator]() {
        // The deadline bounds the whole stream: sent with it, and enforced here too.
        let signal = options.signal
        let deadlineAt: number | undefined
        let timer: ReturnType<typeof setTimeout> | undefined
        if (timeoutMs > 0) {
          deadlineAt = Date.now() + timeoutMs
          const controller = new AbortController()
          timer = setTimeout(
            () =>
              controller.abort(new TimeoutException(`Stream ${spec.name} timed out after ${timeoutMs} ms`)),
            timeoutMs,
          )
          signal = signal ? AbortSignal.any([signal, controller.signal]) : controller.signal
        }
        return self
          .streamWithRefresh(spec, request, signal, deadlineAt, () => clearTimeout(timer))
          [Symbol.asyncIterator]() as AsyncIterator<Item>
      },
    }
  }

  // A stream that fails with TokenExpiredException before its first item is retried once after a refresh.
  private async *streamWithRefresh(
    spec: EndpointSpec,
    request: unknown,
    signal: AbortSignal | undefined,
    deadlineAt: number | undefined,
    done: () => void,
  ): AsyncGenerator<unknown> {
    try {
      let started = false
      try {
        for await (const item of this.doStream(spec, request, signal, deadlineAt)) {
          started = true
          yield item
        }
        return
      } catch (err) {
        const error = toClientError(err)
        if (started || !(error instanceof TokenExpiredException) || !this.refreshFn) throw error
      }
      await this.refreshToken()
      try {
        yield* this.doStream(spec, request, signal, deadlineAt)
      } catch (err) {
        throw toClientError(err)
      }
    } finally {
      done()
    }
  }

  clientStream<Req = unknown, Res = unknown>(
    endpoint: string | EndpointSpec<Req, Res>,
    options: StreamOptions = {},
  ): ClientStreamCall<Req, Res> {
    const spec = this.resolveEndpoint(endpoint, false, true)
    return this.openRequestStream(spec, false, options.signal) as ClientStreamCall<Req, Res>
  }

  bidiStream<Req = unknown, Item = unknown>(
    endpoint: string | EndpointSpec<Req, Item>,
    options: StreamOptions = {},
  ): BidiStreamCall<Req, Item> {
    const spec = this.resolveEndpoint(endpoint, true, true)
    return this.openRequestStream(spec, true, options.signal) as BidiStreamCall<Req, Item>
  }

  /** Opens a stream of requests (a client stream, or a bidirectional one with `bidi`). */
  protected abstract openRequestStream(
    spec: EndpointSpec,
    bidi: boolean,
    signal: AbortSignal | undefined,
  ): ClientStreamCall<unknown, unknown> | BidiStreamCall<unknown, unknown>

  /** One attempt of a unary call. `signal` fires on timeout, on the caller's abort, or never. */
  protected abstract doCall(
    spec: EndpointSpec,
    request: unknown,
    signal: AbortSignal,
    idempotencyKey: string | undefined,
    /** Date.now() time of the attempt's deadline, sent as its timeout (undefined: none to send). */
    deadlineAt: number | undefined,
  ): Promise<unknown>
  /** One attempt of a stream; returning from it (break) must cancel the stream on the server. */
  protected abstract doStream(
    spec: EndpointSpec,
    request: unknown,
    signal?: AbortSignal,
    deadlineAt?: number,
  ): AsyncIterable<unknown>

  abstract onPush(topic: string, handler: (message: unknown) => void): Promise<() => Promise<void>>
  abstract connect(): Promise<void>
  abstract close(): Promise<void>
}

/** A misuse of the client (the wrong call for an endpoint), thrown before anything is sent. */
export function usageError(message: string): TriviumError {
  return new TriviumError(message, 'TRV_CLIENT_USAGE', 400, 'ClientUsageError')
}

/**
 * Runs `fn` with a signal that fires when the deadline passes or the caller aborts. A deadline
 * rejects with TimeoutException, an abort with the signal's reason, even if `fn` never settles.
 */
export function withDeadline<T>(
  spec: EndpointSpec,
  timeoutMs: number,
  outer: AbortSignal | undefined,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  if (outer?.aborted) return Promise.reject(outer.reason)
  const controller = new AbortController()
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const onAbort = () => {
      controller.abort(outer?.reason)
      finish()
      reject(outer?.reason)
    }
    const finish = () => {
      if (timer !== undefined) clearTimeout(timer)
      outer?.removeEventListener('abort', onAbort)
    }
    if (timeoutMs > 0) {
      timer = setTimeout(() => {
        const error = new TimeoutException(`Call to ${spec.name} timed out after ${timeoutMs} ms`)
        controller.abort(error)
        finish()
        reject(error)
      }, timeoutMs)
    }
    outer?.addEventListener('abort', onAbort, { once: true })
    fn(controller.signal).then(
      (value) => {
        finish()
        resolve(value)
      },
      (err) => {
        finish()
        reject(err)
      },
    )
  })
}
