// The client and bidirectional streams open on one connection (PROTOCOL.md "Client and bidirectional
// streams"): each stream's inbox of request items by request id, CLIENT_ITEM / CLIENT_END routed to it,
// and the ids of streams the server ended before the client's half-close, whose late items are dropped.
import {
  type EndpointDefinition,
  type FrameRejectReason,
  ValidationException,
  type WireFormat,
} from '@trivium/core'
import { type Cancellation, type Frame, FrameType } from '@trivium/wire'
import type { FrameCarrier } from './carrier.js'
import type { CallTable } from './flow-control.js'
import { RequestInbox } from './request-stream.js'

/** Ids of streams whose request half the server ended before the client's CLIENT_END, remembered per connection. */
const REMEMBERED_ENDED_STREAMS = 256

/** The tables of a connection that never opened a client stream (most): nothing is made for it. */
const NO_INBOXES: ReadonlyMap<number, RequestInbox> = new Map()
const NO_IDS: ReadonlySet<number> = new Set()

export class ClientStreams {
  /**
   * Open client and bidirectional streams by request id: their request items' inboxes (made at the
   * connection's first client stream: an idle connection holds no table, bench/density).
   */
  #inboxes: Map<number, RequestInbox> | undefined = undefined
  /**
   * Streams whose request half the server ended before the client's CLIENT_END (answered, failed): items
   * the client sent before it saw the end are dropped without an answer (oldest forgotten first).
   */
  #endedEarly: Set<number> | undefined = undefined

  get size(): number {
    return this.#inboxes?.size ?? 0
  }

  get #open(): ReadonlyMap<number, RequestInbox> {
    return this.#inboxes ?? NO_INBOXES
  }

  get #ended(): ReadonlySet<number> {
    return this.#endedEarly ?? NO_IDS
  }

  /** Opens a stream's inbox; CREDIT and STOP_SENDING go out while the call is live and the carrier open. */
  open(
    id: number,
    entry: Cancellation,
    definition: EndpointDefinition,
    format: WireFormat,
    windowBytes: number,
    carrier: FrameCarrier,
  ): RequestInbox {
    const inbox = new RequestInbox(id, entry, definition, format, windowBytes, (type, body) => {
      if (!entry.aborted && carrier.open) carrier.sendBody(type, id, body)
    })
    this.#inboxes ??= new Map()
    this.#inboxes.set(id, inbox)
    this.#endedEarly?.delete(id)
    return inbox
  }

  /** A CANCEL for `id` (already out of the call table): its stream, if it is this call's, reads no more. */
  cancel(id: number, entry: Cancellation): void {
    const inbox = this.#open.get(id)
    if (inbox?.entry === entry) {
      inbox.cancelled = true
      this.#inboxes?.delete(id)
    }
  }

  /** A CANCEL frees its id at once (PROTOCOL.md): a REQUEST reusing it in the same read is a new call. */
  forgetEnded(id: number): void {
    this.#endedEarly?.delete(id)
  }

  /**
   * A CLIENT_ITEM or CLIENT_END. Undefined when taken or dropped; else the refusal to answer with (the
   * call it belonged to, if any, is over).
   */
  receive(frame: Frame, calls: CallTable): [ValidationException, FrameRejectReason] | undefined {
    const id = frame.requestId
    const inbox = this.#open.get(id)
    if (inbox === undefined) {
      if (this.#ended.has(id)) {
        // Sent before the client saw the stream's end: dropped; its half-close ends the memory of it.
        if (frame.type === FrameType.CLIENT_END) this.#endedEarly?.delete(id)
        return undefined
      }
      // A unary call or server stream with this id is cancelled: this ERROR is its one answer.
      const entry = calls.inFlight.get(id)
      if (entry !== undefined) {
        calls.inFlight.delete(id)
        entry.abort(new Error('refused: not a client stream'))
      }
      return [new ValidationException(`No client stream ${id} is open on this connection`), 'client_stream']
    }
    const violation = frame.type === FrameType.CLIENT_ITEM ? inbox.item(frame.payload) : inbox.end()
    if (violation === undefined) return undefined
    // The stream is broken: the call ends, answered by this ERROR only.
    inbox.cancelled = true
    this.#inboxes?.delete(id)
    calls.forget(id, inbox.entry)
    inbox.entry.abort(new Error('refused: client stream protocol violation'))
    return [new ValidationException(violation), 'client_stream']
  }

  /** A call is over: its inbox (if any) closes; answered before the client's half-close, its id is remembered. */
  settle(id: number, entry: Cancellation): void {
    const inbox = this.#open.get(id)
    if (inbox?.entry !== entry) return
    this.#inboxes?.delete(id)
    inbox.close()
    // Answered before the client's half-close: items it sent meanwhile are dropped, not refused.
    if (!inbox.ended && !inbox.cancelled) this.#rememberEnded(id)
  }

  clear(): void {
    this.#inboxes = undefined
  }

  #rememberEnded(id: number): void {
    this.#endedEarly ??= new Set()
    const ended = this.#endedEarly
    if (ended.size >= REMEMBERED_ENDED_STREAMS) {
      const oldest = ended.values().next().value as number
      ended.delete(oldest)
    }
    ended.add(id)
  }
}
