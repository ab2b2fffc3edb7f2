// The server side of a stream of requests (PROTOCOL.md "Client and bidirectional streams"), shared by every
// transport that carries one (frames: CREDIT/STOP_SENDING; HTTP/2: reading the request body or not): the
// items a client sends are held up to the credit window (bytes) and handed to the handler's `for await` as
// it asks; credit goes back as it takes them, so a slow handler makes the client's `send` wait and memory
// stays bounded (the window plus one item per stream). Each item is decoded by the request model here.
import type { Cancellation } from '@trivium/wire'
import { decodeRequest, type WireFormat } from './formats.js'
import type { EndpointDefinition } from './registry.js'
import { isThenable } from './thenable.js'

/** How the inbox tells the client's side of the transport to send more, or to stop sending. */
export interface InboxFlow {
  /** The handler took items: `count` more bytes of items may come (frames: a CREDIT). */
  credit(count: number): void
  /** The handler stopped reading before the half-close (frames: STOP_SENDING). */
  stopSending(): void
}

export class RequestInbox implements AsyncIterable<unknown> {
  readonly #queue: Uint8Array[] = []
  readonly #definition: EndpointDefinition
  readonly #format: WireFormat
  readonly #window: number
  readonly #flow: InboxFlow
  /** Credit granted and item bytes received, in total: an item sent with no credit left breaks the protocol. */
  #granted = 0
  #received = 0
  /** Item bytes taken by the handler since the last CREDIT. */
  #taken = 0
  #started = false
  #failure: { reason: unknown } | undefined
  #wake: (() => void) | undefined
  /** The client's CLIENT_END arrived. */
  ended = false
  /** The server reads no more items (STOP_SENDING sent, or the call is over). */
  stopped = false
  /** Ended by a CANCEL or a protocol violation: the client sends nothing more, so its id is not remembered. */
  cancelled = false

  constructor(
    readonly requestId: number,
    readonly entry: Cancellation,
    definition: EndpointDefinition,
    format: WireFormat,
    window: number,
    flow: InboxFlow,
  ) {
    this.#definition = definition
    this.#format = format
    this.#window = window
    this.#flow = flow
    entry.onAbort = (reason) => this.fail(reason)
  }

  /** A CLIENT_ITEM: undefined when taken (or dropped after STOP_SENDING), else the violation's message. */
  item(payload: Uint8Array): string | undefined {
    if (this.ended) return this.#halfClosed()
    if (this.stopped || this.#failure) return undefined
    if (this.#received >= this.#granted) {
      return `Client stream ${this.requestId} sent an item with no credit left (window ${this.#window} bytes)`
    }
    this.#received += itemCost(payload)
    // A copy: the frame's bytes are a view into a socket chunk the transport may reuse.
    this.#queue.push(payload.slice())
    this.#notify()
    return undefined
  }

  /** The client's half-close: undefined, or the violation's message (a second CLIENT_END). */
  end(): string | undefined {
    if (this.ended) return this.#halfClosed()
    this.ended = true
    this.#notify()
    return undefined
  }

  /** The call was aborted (CANCEL, shutdown, close): a pending `next()` rejects with the reason. */
  fail(reason: unknown): void {
    if (this.#failure) return
    this.#failure = { reason }
    this.#queue.length = 0
    this.#notify()
  }

  /** The call is over: nothing more is read. */
  close(): void {
    this.stopped = true
    this.#queue.length = 0
    this.#notify()
  }

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    return {
      next: () => this.#next(),
      return: async () => {
        // The handler stopped reading before the client's half-close: tell the client to stop sending.
        if (!this.ended && !this.stopped && !this.#failure) {
          this.stopped = true
          this.#queue.length = 0
          this.#flow.stopSending()
        }
        return { done: true, value: undefined }
      },
    }
  }

  async #next(): Promise<IteratorResult<unknown>> {
    if (!this.#started) {
      this.#started = true
      if (!this.ended && !this.stopped && !this.#failure) this.#grant(this.#window)
    }
    for (;;) {
      if (this.#failure) throw this.#failure.reason
      const bytes = this.#queue.shift()
      if (bytes !== undefined) {
        this.#taken += itemCost(bytes)
        if (this.#taken >= Math.ceil(this.#window / 2) && !this.ended && !this.stopped) {
          this.#grant(this.#taken)
          this.#taken = 0
        }
        const value = this.#decode(bytes)
        // An asynchronous model's item settles before the handler takes it.
        return { done: false, value: isThenable(value) ? await value : value }
      }
      if (this.ended || this.stopped) return { done: true, value: undefined }
      await new Promise<void>((resolve) => {
        this.#wake = resolve
      })
    }
  }

  #decode(bytes: Uint8Array): unknown {
    return decodeRequest(this.#definition.name, this.#format, this.#definition.request, bytes)
  }

  #grant(count: number): void {
    this.#granted += count
    this.#flow.credit(count)
  }

  #notify(): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }

  #halfClosed(): string {
    return `Client stream ${this.requestId} is half-closed: nothing may follow CLIENT_END`
  }
}

/** What an item costs of the credit: its payload bytes, at least 1 (an empty model is an item too). */
export function itemCost(payload: Uint8Array): number {
  return Math.max(1, payload.length)
}
