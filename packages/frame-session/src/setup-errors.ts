// @trivium/frame-session's refusals at setup, one row per code (README "Setup errors"): each a TypeError
// with `code`. The options are those of a frame transport, so each message names the transport that
// refused (`@trivium/tcp: …`, `@trivium/websocket: …`).
import { setupErrors } from '@trivium/wire'

export const SETUP = setupErrors('', {
  TRV_FRAME_SESSION_INTEGER: {
    when: 'a numeric option (`maxInFlight`, `maxConnections`, `idleTimeoutMs`, `port`, …) is not an integer of at least its minimum',
    message: (pkg: string, name: string, min: number, value: unknown) =>
      `${pkg}: ${name} must be an integer of at least ${min} (got ${String(value)})`,
  },
  TRV_FRAME_SESSION_COMPRESSION: {
    when: '`compression` (TCP) is not true, false or `{ threshold }` with an integer of at least 0',
    message: (pkg: string, value: unknown) =>
      `${pkg}: compression must be true, false or { threshold: <bytes, an integer of at least 0> } (got ${JSON.stringify(value)})`,
  },
  TRV_FRAME_SESSION_BUS: {
    when: '`bus` lacks `publish` or `subscribe`',
    message: (pkg: string) => `${pkg}: bus must have publish and subscribe methods`,
  },
  TRV_FRAME_SESSION_AUTHORIZE_SUBSCRIBE: {
    when: '`authorizeSubscribe` is not a function',
    message: (pkg: string) => `${pkg}: authorizeSubscribe must be a function`,
  },
  TRV_FRAME_SESSION_PUSH_BUS: {
    when: 'a second frame transport is given a `bus` other than the one `fastify.push` already uses',
    message: (transport: string) =>
      `@trivium/${transport}: fastify.push already exists with another bus; pass the same bus to every frame transport (or only to the first registered)`,
  },
})
