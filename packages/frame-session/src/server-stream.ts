// A server stream's items sent as the handler's generator yields them, waiting for the socket when the
// carrier's backlog is over the high-water mark (PROTOCOL.md "Streams hold constant memory").
import type { EndpointDefinition, WireFormat } from '@trivium/core'
import { STOPPED, StreamStop } from '@trivium/core/internal'
import { FrameType } from '@trivium/wire'
import type { FrameCarrier } from './carrier.js'
import { encodeItem } from './shared-items.js'

const EMPTY = new Uint8Array(0)
const noop = (): void => {}

export interface StreamPump {
  id: number
  definition: EndpointDefinition
  format: WireFormat
  items: AsyncIterable<unknown>
  signal: AbortSignal
  carrier: FrameCarrier
  /** Sends an item's body (compressed when the connection compresses). */
  send(type: number, requestId: number, body: Uint8Array | string): void
  highWaterMark: number
  /** The shutdown's abort reason: rethrown, so the stream ends with an ERROR carrying it. */
  shutdownError: unknown
}

/** Sends items as the generator yields them; waits for the socket when over the high-water mark. */
export async function pumpStream(pump: StreamPump): Promise<void> {
  const { id, definition, format, signal, carrier } = pump
  const iterator = pump.items[Symbol.asyncIterator]()
  // One listener for the stream's life; each item's wait leaves nothing behind.
  const aborted = new StreamStop()
  const onAbort = (): void => aborted.stop(signal.reason)
  if (signal.aborted) onAbort()
  else signal.addEventListener('abort', onAbort, { once: true })
  try {
    while (true) {
      const step = await aborted.wait(iterator.next())
      if (step === STOPPED) break
      if (step.done) {
        carrier.sendBody(FrameType.STREAM_END, id, EMPTY)
        break
      }
      pump.send(FrameType.STREAM_ITEM, id, encodeItem(definition, format, step.value))
      if (carrier.backlog > pump.highWaterMark) await carrier.drain(signal)
      if (signal.aborted || !carrier.open) break
    }
  } finally {
    signal.removeEventListener('abort', onAbort)
    // Stops the generator (its finally runs). Not awaited: a generator stuck in an await that ignores
    // call.signal must not hold the connection.
    iterator.return?.()?.catch?.(noop)
  }
  if (signal.aborted && signal.reason === pump.shutdownError) throw signal.reason
}
