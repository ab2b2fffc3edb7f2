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
  const handlers: Record<string, (message: Message) => void> = {
    [CHANNELS.connection]: (msg) => {
      const transport = bounded(msg.transport, TRANSPORTS)
      if (msg.event === 'open') m.connections.labels(transport).inc()
      else if (msg.event === 'close') m.connections.labels(transport).dec()
    },
    [CHANNELS.frameRejected]: (msg) => {
      m.framesRejected.labels(bounded(msg.transport, TRANSPORTS), bounded(msg.reason, REJECT_REASONS)).inc()
    },
    [CHANNELS.push]: (msg) => {
      m.push.labels(bounded(msg.transport, TRANSPORTS), bounded(msg.event, PUSH_EVENTS)).inc()
    },
    [CHANNELS.authRevoked]: (msg) => {
      const count = msg.count
      if (typeof count === 'number' && Number.isFinite(count) && count > 0) m.revocations.inc(count)
    },
    [CHANNELS.authFailure]: (msg) => {
      m.authFailures.labels(bounded(msg.reason, AUTH_FAILURE_REASONS)).inc()
    },
    [CHANNELS.busMessage]: (msg) => {
      const { channel, lagSeconds } = msg
      if (typeof lagSeconds !== 'number' || !Number.isFinite(lagSeconds)) return
      m.busLag.labels(boundedChannel(busChannels, channel)).observe(lagSeconds)
    },
  }
  // Channel messages are `unknown`; a message that is not an object is not one of ours.
  const listeners = Object.entries(handlers).map(([name, fn]) => {
    const listener = (message: unknown) => {
      if (typeof message === 'object' && message !== null) fn({ ...message })
    }
    return [name, listener] as const
  })
  for (const [name, listener] of listeners) subscribe(name, listener)
  return () => {
    for (const [name, listener] of listeners) unsubscribe(name, listener)
  }
}
