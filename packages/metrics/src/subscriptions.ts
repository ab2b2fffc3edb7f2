// Transport and auth events arrive on node:diagnostics_channel (published by the frame session and by
// auth); each message moves one metric. Label values outside the documented sets count as `other`.
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import {
  AUTH_FAILURE_REASONS,
  bounded,
  boundedChannel,
  CHANNELS,
  PUSH_EVENTS,
  REJECT_REASONS,
  TRANSPORTS,
} from './channels.js'
import type { Instruments } from './instruments.js'

type Message = Record<string, unknown>

/** Subscribes every channel; returns the function that unsubscribes them. */
export function subscribeChannels(m: Instruments): () => void {
  const busChannels = new Set<string>()
  const handlers: Record<string, (message: unknown) => void> = {
    [CHANNELS.connection]: (raw) => {
      const msg = raw as Message
      const transport = bounded(msg.transport, TRANSPORTS)
      if (msg.event === 'open') m.connections.labels(transport).inc()
      else if (msg.event === 'close') m.connections.labels(transport).dec()
    },
    [CHANNELS.frameRejected]: (raw) => {
      const msg = raw as Message
      m.framesRejected.labels(bounded(msg.transport, TRANSPORTS), bounded(msg.reason, REJECT_REASONS)).inc()
    },
    [CHANNELS.push]: (raw) => {
      const msg = raw as Message
      m.push.labels(bounded(msg.transport, TRANSPORTS), bounded(msg.event, PUSH_EVENTS)).inc()
    },
    [CHANNELS.authRevoked]: (raw) => {
      const count = (raw as Message).count
      if (typeof count === 'number' && Number.isFinite(count) && count > 0) m.revocations.inc(count)
    },
    [CHANNELS.authFailure]: (raw) => {
      m.authFailures.labels(bounded((raw as Message).reason, AUTH_FAILURE_REASONS)).inc()
    },
    [CHANNELS.busMessage]: (raw) => {
      const { channel, lagSeconds } = raw as Message
      if (typeof lagSeconds !== 'number' || !Number.isFinite(lagSeconds)) return
      m.busLag.labels(boundedChannel(busChannels, channel)).observe(lagSeconds)
    },
  }
  for (const [name, fn] of Object.entries(handlers)) subscribe(name, fn)
  return () => {
    for (const [name, fn] of Object.entries(handlers)) unsubscribe(name, fn)
  }
}
