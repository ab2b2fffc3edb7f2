// The receiving side of a server stream on the client: a queue the frame handler fills and the stream's
// iterator drains, with the connection's loss as a signal of its own (a resumable stream reconnects).

export type StreamSignal =
  | { kind: 'item'; value: unknown }
  | { kind: 'end' }
  | { kind: 'error'; error: unknown }
  | { kind: 'lost' }

/** The receiving side of one stream: a queue the frame handler fills and the iterator drains. */
export class StreamQueue {
  private readonly queue: StreamSignal[] = []
  private wake: (() => void) | undefined
  put(signal: StreamSignal): void {
    this.queue.push(signal)
    const w = this.wake
    this.wake = undefined
    w?.()
  }
  async take(): Promise<StreamSignal> {
    while (this.queue.length === 0) {
      await new Promise<void>((resolve) => {
        this.wake = resolve
      })
    }
    return this.queue.shift() as StreamSignal
  }
}
