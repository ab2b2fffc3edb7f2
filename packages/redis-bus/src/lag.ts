// Message lag for observers (PROTOCOL.md "Observability"): each message carries its send time (`at`,
// ms since the epoch) and every received one is published on `trivium:bus:message` as
// `{ channel, lagSeconds }`. Across hosts the figure includes their clock difference.
import { channel } from 'node:diagnostics_channel'

const messages = channel('trivium:bus:message')

/** The `,"at":<now>` member added to an outgoing envelope. */
export function sendTime(): string {
  return `,"at":${Date.now()}`
}

export function reportLag(busChannel: string, at: unknown): void {
  if (!messages.hasSubscribers || typeof at !== 'number' || !Number.isFinite(at)) return
  messages.publish({ channel: busChannel, lagSeconds: Math.max(0, Date.now() - at) / 1000 })
}
