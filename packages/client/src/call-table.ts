// The calls in flight on one client connection, by request id, and the answers the server sends them
// (RESPONSE, ERROR, STREAM_ITEM, STREAM_END, and a client stream's CREDIT and STOP_SENDING).
import {
  ERROR_KINDS,
  type Frame,
  FrameType,
  MAX_JSON_DEPTH,
  nestsDeeperThan,
  readCredit,
} from '@trivium/wire'
import type { RequestStreamCall } from './client-streams.js'
import { type ErrorBody, fromErrorBody, NetworkException, type TriviumError } from './errors.js'
import type { FrameLink } from './frame-connection.js'
import type { StreamQueue } from './frame-streams.js'
import type { EndpointSpec, PayloadFormat } from './types.js'

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

export type Pending =
  | {
      kind: 'call'
      spec: EndpointSpec
      format: PayloadFormat
      resolve: (value: unknown) => void
      reject: (error: unknown) => void
    }
  | { kind: 'control'; resolve: (value: unknown) => void; reject: (error: unknown) => void }
  | { kind: 'stream'; spec: EndpointSpec; format: PayloadFormat; queue: StreamQueue }
  | { kind: 'requests'; spec: EndpointSpec; format: PayloadFormat; call: RequestStreamCall }

export interface Conn {
  link: FrameLink
  pending: Map<number, Pending>
  draining: boolean
  closed: boolean
  heartbeat: ReturnType<typeof setInterval> | undefined
  awaitingPong: number | undefined
}

function decodePayload(spec: EndpointSpec, format: PayloadFormat, bytes: Uint8Array): unknown {
  const model = spec.response
  try {
    // The server answers in JSON when the response model has no binary form (PROTOCOL.md "HTTP").
    if (format === 'binary' && typeof model.decode === 'function' && typeof model.encode === 'function') {
      return model.decode(bytes)
    }
    const text = strictUtf8.decode(bytes)
    const json = text.length === 0 ? undefined : JSON.parse(text)
    // The model's reader recurses with the data (a recursive model): bounded as the server bounds requests.
    if (nestsDeeperThan(json)) throw new Error(`nested deeper than ${MAX_JSON_DEPTH} levels`)
    return model.fromJSON(json)
  } catch (err) {
    throw new NetworkException(`Bad response from ${spec.name}: ${(err as Error).message}`, { cause: err })
  }
}

function errorFromPayload(bytes: Uint8Array): TriviumError {
  try {
    const body = JSON.parse(strictUtf8.decode(bytes)) as Partial<ErrorBody>
    if (body && typeof body === 'object' && typeof body.code === 'string') return fromErrorBody(body)
  } catch {
    // fall through
  }
  return new NetworkException('Bad error frame from the server')
}

/** What answering a frame asks of the client. */
export interface AnswerHooks {
  /** Tells the server a stream's consumer is gone (its item did not decode). */
  cancel(conn: Conn, id: number): void
  /** An ERROR for no call in flight (id 0: the connection's own). */
  unclaimed(error: TriviumError): void
}

/**
 * An answer to a call in flight (RESPONSE, ERROR, STREAM_ITEM, STREAM_END; CREDIT and STOP_SENDING for a
 * client stream). False when the frame was for no call the table holds (nothing changed).
 */
export function answerFrame(conn: Conn, frame: Frame, hooks: AnswerHooks): boolean {
  const id = frame.requestId
  switch (frame.type) {
    case FrameType.CREDIT:
    case FrameType.STOP_SENDING: {
      const entry = conn.pending.get(id)
      if (entry?.kind !== 'requests') return false
      if (frame.type === FrameType.CREDIT) entry.call.credit(readCredit(frame.payload))
      else entry.call.stop()
      break
    }
    case FrameType.RESPONSE: {
      const entry = conn.pending.get(id)
      if (entry?.kind === 'requests') {
        conn.pending.delete(id)
        if (entry.call.bidi) return false
        try {
          entry.call.finish(undefined, decodePayload(entry.spec, entry.format, frame.payload))
        } catch (err) {
          entry.call.finish(err)
        }
        break
      }
      if (!entry || entry.kind === 'stream') return false
      conn.pending.delete(id)
      if (entry.kind === 'control') entry.resolve(undefined)
      else {
        try {
          entry.resolve(decodePayload(entry.spec, entry.format, frame.payload))
        } catch (err) {
          entry.reject(err)
        }
      }
      break
    }
    case FrameType.ERROR: {
      const error = errorFromPayload(frame.payload)
      const entry = conn.pending.get(id)
      if (!entry) {
        hooks.unclaimed(error)
        return false
      }
      conn.pending.delete(id)
      if (entry.kind === 'requests') entry.call.finish(error)
      else if (entry.kind !== 'stream') entry.reject(error)
      else if (
        conn.draining &&
        error.code === ERROR_KINDS.ServiceUnavailableException.code &&
        entry.spec.resume
      ) {
        entry.queue.put({ kind: 'lost' }) // the server is going away: resume on the new connection
      } else entry.queue.put({ kind: 'error', error })
      break
    }
    case FrameType.STREAM_ITEM:
      return streamItem(conn, frame, hooks)
    case FrameType.STREAM_END: {
      const entry = conn.pending.get(id)
      if (entry?.kind === 'requests') {
        conn.pending.delete(id)
        entry.call.finish()
        break
      }
      if (entry?.kind !== 'stream') return false
      conn.pending.delete(id)
      entry.queue.put({ kind: 'end' })
      break
    }
  }
  return true
}

/** A STREAM_ITEM to its stream; one that does not decode ends the stream (and the server is told). */
function streamItem(conn: Conn, frame: Frame, hooks: AnswerHooks): boolean {
  const id = frame.requestId
  const entry = conn.pending.get(id)
  if (entry?.kind === 'requests') {
    try {
      entry.call.item(decodePayload(entry.spec, entry.format, frame.payload))
    } catch (err) {
      conn.pending.delete(id)
      hooks.cancel(conn, id)
      entry.call.finish(err)
    }
    return true
  }
  if (entry?.kind !== 'stream') return false
  try {
    entry.queue.put({ kind: 'item', value: decodePayload(entry.spec, entry.format, frame.payload) })
  } catch (err) {
    conn.pending.delete(id)
    hooks.cancel(conn, id)
    entry.queue.put({ kind: 'error', error: err })
  }
  return true
}
