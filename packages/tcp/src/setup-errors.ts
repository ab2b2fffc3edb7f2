// @trivium/tcp's refusals at setup, one row per code (README "Setup errors"): each a TypeError with `code`.
// The options it shares with WebSocket are refused by @trivium/frame-session (TRV_FRAME_SESSION_*).
import { setupErrors } from '@trivium/wire'

export const SETUP = setupErrors('@trivium/tcp', {
  TRV_TCP_MODE: {
    when: '`mode` is not "direct" or "inject"',
    message: () => 'mode must be "direct" or "inject"',
  },
  TRV_TCP_HOST: {
    when: '`host` is not a string',
    message: () => 'host must be a string',
  },
  TRV_TCP_TLS: {
    when: '`tls` is not an object of node:tls server options',
    message: () => 'tls must be an object of node:tls server options',
  },
  TRV_TCP_PORT: {
    when: '`port` is above 65535 (below 0, or not an integer: `TRV_FRAME_SESSION_INTEGER`)',
    message: () => 'port must be at most 65535',
  },
})
