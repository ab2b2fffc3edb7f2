// One stream item sent to many sessions (an event fanned out to every subscriber) is encoded once per
// response model and format, not once per session: a frozen item is taken as a value that does not
// change, and its bytes are kept beside it (a WeakMap: they go when the item goes). Items that are not
// frozen are encoded for each send, as before. The shared bytes are marked, so that what is made from
// them per session can be shared too: a carrier's frame for one stream id (`SharedFrames`), a
// compressed body (compression.ts). Nothing here is written after it is made.
import type { EndpointDefinition, WireFormat } from '@trivium/core'
import { encodePayload } from '@trivium/core/internal'

interface Encoded {
  model: unknown
  format: WireFormat
  bytes: Uint8Array
  /** Another model or format the same item was sent with (rare: a list of one or two). */
  next: Encoded | undefined
}

const encodedItems = new WeakMap<object, Encoded>()
/** Bodies sent unchanged by many sessions: `encodeItem`'s shared bytes and what is derived from them. */
const sharedBodies = new WeakSet<Uint8Array>()

/** A stream item's payload bytes; shared by every send of the same frozen item with the same model and format. */
export function encodeItem(definition: EndpointDefinition, format: WireFormat, value: unknown): Uint8Array {
  if (value === null || typeof value !== 'object' || !Object.isFrozen(value))
    return encodePayload(definition, format, value)
  const model = definition.response
  const first = encodedItems.get(value)
  for (let seen = first; seen !== undefined; seen = seen.next)
    if (seen.model === model && seen.format === format) return seen.bytes
  const bytes = encodePayload(definition, format, value)
  encodedItems.set(value, { model, format, bytes, next: first })
  sharedBodies.add(bytes)
  return bytes
}

/** `body` is sent unchanged by many sessions (and never written). */
export function isSharedBody(body: Uint8Array | string): body is Uint8Array {
  return typeof body !== 'string' && sharedBodies.has(body)
}

/** Marks bytes made once from a shared body for every session (a compressed form of it). */
export function markShared(body: Uint8Array): void {
  sharedBodies.add(body)
}

interface Frame {
  type: number
  requestId: number
  bytes: Uint8Array
  /** The frame of another type or stream id with the same body (sessions that chose other ids). */
  next: Frame | undefined
}

/**
 * A carrier's frames of shared bodies (an event to N subscribers is one frame per stream id, not one
 * per session): kept beside the body (a WeakMap: they go when the body goes). Other bodies are framed
 * for each send. A frame is never written after it is made, so every session's socket may hold it.
 */
export class SharedFrames<T extends Uint8Array> {
  readonly #frames = new WeakMap<Uint8Array, Frame>()
  readonly #build: (type: number, requestId: number, body: Uint8Array | string) => T
  /** Stream ids remembered per body; past them, frames are built per send (a bound on what one body holds). */
  readonly #maxIds: number

  constructor(build: (type: number, requestId: number, body: Uint8Array | string) => T, maxIds = 64) {
    this.#build = build
    this.#maxIds = maxIds
  }

  /** The frame of `type`, `requestId` and `body`: shared when the body is. */
  frame(type: number, requestId: number, body: Uint8Array | string): T {
    if (!isSharedBody(body)) return this.#build(type, requestId, body)
    const first = this.#frames.get(body)
    let count = 0
    for (let seen = first; seen !== undefined; seen = seen.next, count++)
      if (seen.requestId === requestId && seen.type === type) return seen.bytes as T
    const bytes = this.#build(type, requestId, body)
    if (count < this.#maxIds) this.#frames.set(body, { type, requestId, bytes, next: first })
    return bytes
  }
}
