// Admission of a REQUEST frame (PROTOCOL.md "Frames"): whether the connection takes a call with this id
// now (shutdown, a closing session, a duplicate id, maxInFlight), then the request's parts (TCP's metadata
// and per-frame format in front of the model) and a client stream's own limits.
import {
  type EndpointDefinition,
  type FrameRejectReason,
  RateLimitExceededException,
  ServiceUnavailableException,
  type Trivium,
  type TriviumError,
  UnsupportedMediaTypeException,
  ValidationException,
  type WireFormat,
} from '@trivium/core'
import { SHUTDOWN_MESSAGE } from '@trivium/core/internal'
import type { Frame } from '@trivium/wire'
import type { RequestParts } from './carrier.js'
import type { ClientStreams } from './client-streams.js'
import type { CallTable } from './flow-control.js'

/** A refused frame: the typed error its ERROR carries and the reason diagnostics see. */
export type Refusal = [TriviumError, FrameRejectReason]

/** What admission looks at, from the session and its server. */
export interface AdmissionState {
  shuttingDown: boolean
  /** Set while a closed session answers its calls in flight: new calls get the same error. */
  closing: TriviumError | undefined
  calls: CallTable
  maxInFlight: number
}

/** Why the connection takes no call with request id `id` now, or undefined to take it. */
export function admissionRefusal(id: number, state: AdmissionState): Refusal | undefined {
  if (state.shuttingDown) return [new ServiceUnavailableException(SHUTDOWN_MESSAGE), 'shutting_down']
  if (state.closing !== undefined) return [state.closing, 'session_closed']
  if (state.calls.inFlight.has(id)) {
    return [new ValidationException(`Request id ${id} is already in flight`), 'duplicate_id']
  }
  const max = state.maxInFlight
  if (state.calls.running >= max) {
    return [
      new RateLimitExceededException(1, `Too many requests in flight on this connection (limit ${max})`),
      'in_flight_limit',
    ]
  }
  return undefined
}

/** An admitted REQUEST's parts: the model's bytes, the frame's metadata (TCP) and the payload format. */
export interface AdmittedRequest {
  payload: Uint8Array
  metadata: Record<string, string> | undefined
  format: WireFormat
}

/**
 * Reads a REQUEST's parts where the carrier has a `split` (TCP: metadata and a per-frame format in front
 * of the model; elsewhere the payload is the model). A refusal for bad metadata or an unknown format.
 */
export function readRequest(
  frame: Frame,
  trivium: Trivium,
  format: WireFormat,
  split: (payload: Uint8Array) => RequestParts,
): AdmittedRequest | Refusal {
  let parts: RequestParts
  try {
    parts = split(frame.payload)
  } catch (err) {
    return [new ValidationException((err as Error).message), 'bad_metadata']
  }
  if (parts.formatName === undefined) return { payload: parts.payload, metadata: parts.metadata, format }
  const named = trivium.formats.get(parts.formatName)
  if (named === undefined) {
    return [new UnsupportedMediaTypeException(`Unsupported format: ${parts.formatName}`), 'bad_format']
  }
  return { payload: parts.payload, metadata: parts.metadata, format: named }
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
