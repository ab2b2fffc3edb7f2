// One stream item sent to many sessions (an event fanned out to every subscriber) is encoded once per
// response model and format, not once per session: a frozen item is taken as a value that does not
// change, and its bytes are kept beside it (a WeakMap: they go when the item goes). Items that are not
// frozen are encoded for each send, as before.
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
  return bytes
}
