// A client or bidirectional stream on the client (PROTOCOL.md "Client and bidirectional streams"): the
// items it sends wait for the server's credit, in order; the server's answer settles it.
import { usageError } from './base.js'
import { toClientError } from './errors.js'
import { StreamQueue } from './frame-streams.js'
import type { BidiStreamCall, ClientStreamCall, EndpointSpec } from './types.js'

/** What a RequestStreamCall asks of its connection. */
export interface RequestStreamTransport {
  /** Connects and sends the REQUEST; rejects when it cannot. */
  open(): Promise<void>
  encode(value: unknown): Promise<Uint8Array>
  item(bytes: Uint8Array): void
  end(): void
  cancel(): void
}

/**
 * A client or bidirectional stream on the client (PROTOCOL.md "Client and bidirectional streams"): sends
 * wait for credit, in order; the server's answer (RESPONSE, items, STREAM_END, ERROR) or a lost connection
 * settles it.
 */
export class RequestStreamCall
  implements ClientStreamCall<unknown, unknown>, BidiStreamCall<unknown, unknown>
{
  transport!: RequestStreamTransport
  onSettled: (() => void) | undefined
  readonly response: Promise<unknown>
  settled = false
  #resolve!: (value: unknown) => void
  #reject!: (error: unknown) => void
  #error: { error: unknown } | undefined
  #credit = 0
  #stopped = false
  #ended = false
  #wake: (() => void) | undefined
  /** Sends run one after another, so items keep their order and credit is counted exactly. */
  #chain: Promise<unknown> = Promise.resolve()
  #opened: Promise<void> | undefined
  readonly #items = new StreamQueue()

  constructor(
    readonly spec: EndpointSpec,
    readonly bidi: boolean,
  ) {
    this.response = new Promise((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
    })
    // A caller that only iterates (bidi) or only sends must not see an unhandled rejection.
    this.response.catch(noop)
  }

  start(): void {
    this.#opened = this.transport.open().catch((err) => this.finish(toClientError(err)))
  }

  send(item: unknown): Promise<boolean> {
    if (this.#ended) {
      return Promise.reject(usageError(`send() after end() on the stream to ${this.spec.name}`))
    }
    return this.#enqueue(async () => {
      await this.#opened
      const bytes = await this.transport.encode(item)
      for (;;) {
        if (this.#error) throw this.#error.error
        if (this.#stopped || this.settled) return false
        // Credit is in bytes: an item may go out while any is left (PROTOCOL.md), costing its size.
        if (this.#credit > 0) break
        await new Promise<void>((resolve) => {
          this.#wake = resolve
        })
      }
      this.#credit -= Math.max(1, bytes.length)
      this.transport.item(bytes)
      return true
    })
  }

  async sendAll(items: Iterable<unknown> | AsyncIterable<unknown>): Promise<boolean> {
    for await (const item of items) {
      if (!(await this.send(item))) return false
    }
    await this.end()
    return true
  }

  end(): Promise<void> {
    if (this.#ended) return this.#chain.then(noop, noop)
    this.#ended = true
    return this.#enqueue(async () => {
      await this.#opened
      if (!this.settled && !this.#stopped) this.transport.end()
    }).then(noop, noop)
  }

  cancel(reason?: unknown): void {
    if (this.settled) return
    this.transport.cancel()
    this.finish(reason ?? new Error('cancelled'))
  }

  // ---- from the connection ----

  credit(count: number): void {
    this.#credit += count
    this.#notify()
  }

  stop(): void {
    this.#stopped = true
    this.#notify()
  }

  item(value: unknown): void {
    this.#items.put({ kind: 'item', value })
  }

  /** The call is over: an error, else a client stream's response (or a bidi stream's STREAM_END). */
  finish(error?: unknown, value?: unknown): void {
    if (this.settled) return
    this.settled = true
    this.onSettled?.()
    if (error !== undefined) {
      this.#error = { error }
      this.#reject(error)
      this.#items.put({ kind: 'error', error })
    } else {
      this.#resolve(value)
      this.#items.put({ kind: 'end' })
    }
    this.#notify()
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<unknown> {
    if (!this.bidi) throw usageError(`Endpoint ${this.spec.name} answers one response: await .response`)
    try {
      for (;;) {
        const next = await this.#items.take()
        if (next.kind === 'item') yield next.value
        else if (next.kind === 'end') return
        else if (next.kind === 'error') throw next.error
        else return
      }
    } finally {
      // The consumer stopped early (break, throw): tell the server.
      this.cancel(new Error('iteration stopped'))
    }
  }

  #enqueue<T>(step: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(step)
    this.#chain = run.catch(noop)
    return run
  }

  #notify(): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }
}

function noop(): void {}
