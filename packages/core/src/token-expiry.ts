// The end of a session at its token's expiry, the same on every transport that keeps one open (frame
// connections, HTTP event streams): PROTOCOL.md "Frames" (session expiry) and "HTTP streaming".

/** The spec's message for an expired token; also what ends a session or stream when its token expires. */
export const TOKEN_EXPIRED_MESSAGE = 'Token has expired'

/** setTimeout's largest delay; a later expiry re-arms the timer when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Calls `expired` once the wall clock has reached `expiresAt` (ms since the epoch); returns the function
 * that cancels it. The timer does not keep the process alive.
 */
export function atExpiry(expiresAt: number, expired: () => void): () => void {
  let timer: NodeJS.Timeout
  const arm = (): void => {
    timer = setTimeout(
      () => {
        // Timers may fire a little early against the wall clock: check, and re-arm if so.
        if (Date.now() < expiresAt) arm()
        else expired()
      },
      Math.min(Math.max(0, expiresAt - Date.now()), MAX_TIMER_MS),
    )
    timer.unref()
  }
  arm()
  return () => clearTimeout(timer)
}
