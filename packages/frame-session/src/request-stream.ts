// The server side of a stream of requests on frames: core's inbox (shared with HTTP/2), answering the client
// with CREDIT and STOP_SENDING frames for its request id.
import type { EndpointDefinition, WireFormat } from '@trivium/core'
import { RequestInbox as Inbox } from '@trivium/core/internal'
import { type Cancellation, encodeCredit, FrameType } from '@trivium/wire'

const EMPTY = new Uint8Array(0)

/** How the inbox answers the client: CREDIT and STOP_SENDING frames for its request id. */
export type InboxSend = (type: number, body: Uint8Array) => void

export class RequestInbox extends Inbox {
  constructor(
    requestId: number,
    entry: Cancellation,
    definition: EndpointDefinition,
    format: WireFormat,
    window: number,
    send: InboxSend,
  ) {
    super(requestId, entry, definition, format, window, {
      credit: (count) => send(FrameType.CREDIT, encodeCredit(count)),
      stopSending: () => send(FrameType.STOP_SENDING, EMPTY),
    })
  }
}
