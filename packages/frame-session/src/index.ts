// @trivium/frame-session — the server side of a frame connection, shared by @trivium/websocket and
// @trivium/tcp (PROTOCOL.md "Frames"). A transport writes one carrier (bytes and close semantics) and
// gets dispatch, admission, streams, CANCEL, push, subscribe authorization, identity, expiry and
// shutdown from here.
export type { CloseKind, FrameCarrier, RequestParts } from './carrier.js'
export { connectionLogger, ownLogger } from './connection-logger.js'
export { type DrainableSocket, waitForDrain } from './drain.js'
export { httpFormOf } from './http-form.js'
export {
  defaultShutdownGrace,
  FRAME_SESSION_OPTIONS,
  type FrameSessionOptions,
  integerOption,
  type ResolvedFrameSessionOptions,
  resolveFrameSessionOptions,
} from './options.js'
export { InjectBridge, type InjectOutcome } from './route-bridge.js'
export { FrameServer, TOO_MANY_CONNECTIONS, TOO_MANY_FROM_ADDRESS } from './server.js'
export {
  type ConnectionIdentity,
  FrameSession,
  type SessionInit,
  SHUTDOWN_MESSAGE,
  TOKEN_EXPIRED_MESSAGE,
} from './session.js'
export { isSharedBody, SharedFrames } from './shared-items.js'
export type { BridgedCall, BridgedOutcome, UnaryBridge } from './unary.js'
