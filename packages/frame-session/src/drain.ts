// Backpressure on a Node socket, shared by the carriers: wait for 'drain', a close or an abort.
import type { EventEmitter } from 'node:events'

export interface DrainableSocket extends EventEmitter {
  readonly writableNeedDrain: boolean
  readonly destroyed: boolean
}

/** Resolves when `socket` can take more bytes, closes, or `signal` aborts. Leaves no listener behind. */
export function waitForDrain(socket: DrainableSocket, signal: AbortSignal): Promise<void> {
  if (!socket.writableNeedDrain || socket.destroyed || signal.aborted) return Promise.resolve()
  return new Promise<void>((resolve) => {
    const done = (): void => {
      socket.off('drain', done)
      socket.off('close', done)
      signal.removeEventListener('abort', done)
      resolve()
    }
    socket.on('drain', done)
    socket.on('close', done)
    signal.addEventListener('abort', done)
  })
}
