// @trivium/websocket's refusals at setup, one row per code (README "Setup errors"): each a TypeError with
// `code`. The options it shares with TCP are refused by @trivium/frame-session (TRV_FRAME_SESSION_*).
import { setupErrors } from '@trivium/wire'

export const SETUP = setupErrors('@trivium/websocket', {
  TRV_WEBSOCKET_PATH: {
    when: '`path` is not a string starting with "/"',
    message: () => 'path must be a string starting with "/"',
  },
  TRV_WEBSOCKET_FUNCTION: {
    when: '`identify` or `allowOrigin` is not a function',
    message: (option: string) => `${option} must be a function`,
  },
  TRV_WEBSOCKET_COMPRESSION: {
    when: '`compression` (the TCP frame flag) is given',
    message: () =>
      'compression is the TCP frame flag; on WebSocket use perMessageDeflate: true (PROTOCOL.md "Compression")',
  },
  TRV_WEBSOCKET_PER_MESSAGE_DEFLATE: {
    when: '`perMessageDeflate` is not true, false or `{ threshold }`',
    message: () => 'perMessageDeflate must be true, false or { threshold: <bytes> }',
  },
  TRV_WEBSOCKET_APP_DEFLATE: {
    when: 'the application registered @fastify/websocket and `perMessageDeflate` is not false',
    message: () =>
      'perMessageDeflate cannot be applied to the @fastify/websocket the application registered: pass { options: { perMessageDeflate, maxPayload } } to it instead',
  },
})
