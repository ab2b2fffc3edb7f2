// Admission of a REQUEST frame (PROTOCOL.md "Frames"): whether the connection takes a call with this id
// now (shutdown, a closing session, a duplicate id, maxInFlight), then the request's parts (TCP's metadata
// and per-frame format in front of the model) and a client stream's own limits.
import {
  type EndpointDefinition,
  type FrameRejectReason,
  PayloadTooLargeException,
  RateLimitExceededException,
  ServiceUnavailableException,
  type Trivium,
  type TriviumError,
  UnsupportedMediaTypeException,
  ValidationException,
  type WireFormat,
} from '@trivium/core'
import { SHUTDOWN_MESSAGE } from '@trivium/core/internal'
import { FrameError, FrameErrorCode, MALFORMED_FRAME_MESSAGE } from '@trivium/wire'
import type { RequestParts } from './carrier.js'
import type { ClientStreams } from './client-streams.js'
import type { CallTable } from './flow-control.js'

/** A refused frame: the typed error its ERROR carries and the reason diagnostics see. */
export type Refusal = [TriviumError, FrameRejectReason]

/** An undecodable frame's refusal: too large, of an unknown type, or malformed. */
export function frameRefusal(err: unknown): Refusal {
  const code = err instanceof FrameError ? err.code : undefined
  if (code === FrameErrorCode.TOO_LARGE)
    return [new PayloadTooLargeException((err as Error).message), 'too_large']
  const typed = new ValidationException(code === undefined ? MALFORMED_FRAME_MESSAGE : (err as Error).message)
  return [typed, code === FrameErrorCode.UNKNOWN_TYPE ? 'unknown_type' : 'malformed']
}

/**
 * Why the connection takes no call with request id `id` now, or undefined to take it. `closing` is set
 * while a closed session answers its calls in flight: new calls get the same error. (Arguments, not an
 * object: this runs for every REQUEST frame.)
 */
export function admissionRefusal(
  id: number,
  shuttingDown: boolean,
  closing: TriviumError | undefined,
  calls: CallTable,
  maxInFlight: number,
): Refusal | undefined {
  if (shuttingDown) return [new ServiceUnavailableException(SHUTDOWN_MESSAGE), 'shutting_down']
  if (closing !== undefined) return [closing, 'session_closed']
  if (calls.inFlight.has(id)) {
    return [new ValidationException(`Request id ${id} is already in flight`), 'duplicate_id']
  }
  if (calls.running >= maxInFlight) {
    return [
      new RateLimitExceededException(
        1,
        `Too many requests in flight on this connection (limit ${maxInFlight})`,
      ),
      'in_flight_limit',
    ]
  }
  return undefined
}

/**
 * The format of a REQUEST whose carrier splits it (TCP: a `format` in the frame's metadata), or the
 * connection's when the frame names none; a refusal for a format the server does not know.
 */
export function requestFormat(
  parts: RequestParts,
  trivium: Trivium,
  format: WireFormat,
): WireFormat | Refusal {
  if (parts.formatName === undefined) return format
  const named = trivium.formats.get(parts.formatName)
  if (named === undefined) {
    return [new UnsupportedMediaTypeException(`Unsupported format: ${parts.formatName}`), 'bad_format']
  }
  return named
}

/** A client stream's own limits: streams open on the connection, and a REQUEST with no model. */
export function clientStreamRefusal(
  definition: EndpointDefinition,
  payload: Uint8Array,
  streams: ClientStreams,
  maxClientStreams: number,
): Refusal | undefined {
  if (!definition.requestStream) return undefined
  if (streams.size >= maxClientStreams) {
    return [
      new RateLimitExceededException(
        1,
        `Too many client streams open on this connection (limit ${maxClientStreams})`,
      ),
      'in_flight_limit',
    ]
  }
  if (payload.length > 0) {
    return [
      new ValidationException(
        "A client stream's REQUEST carries no request model: send the requests as CLIENT_ITEM frames",
      ),
      'client_stream',
    ]
  }
  return undefined
}
