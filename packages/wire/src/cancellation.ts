// Shared by @trivium/websocket and @trivium/tcp (browser-safe, no I/O).
// Per-call cancellation without an AbortController per call: creating one (and its AbortSignal) was
// the largest single cost of a unary frame call. The controller is made only when something asks for
// the signal (a handler reading `call.signal`, a stream pump); an abort before that is remembered and
// applied to the controller when it is made, so the signal a handler sees behaves the same.

export class Cancellation {
  aborted = false
  reason: unknown = undefined
  #controller: AbortController | undefined
  /** Called on abort (the inject bridge destroys the injected request). */
  onAbort: ((reason: unknown) => void) | undefined = undefined
  /** For core's lazy `signal` (CallInit accepts a function that makes the signal on first use). */
  readonly lazySignal = (): AbortSignal => this.signal

  constructor(readonly streaming: boolean) {}

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.aborted) this.#controller.abort(this.reason)
    }
    return this.#controller.signal
  }

  abort(reason: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    this.#controller?.abort(reason)
    this.onAbort?.(reason)
  }
}
