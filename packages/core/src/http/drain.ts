// Shutdown of HTTP unary calls (PROTOCOL.md "HTTP streaming", "Limits"): the calls in flight when
// `app.close()` begins get the one shutdown grace of every transport to answer; those still running
// then are aborted (`call.signal`, reason ServiceUnavailableException) and answered 503 `Server is
// shutting down` with `Connection: close`, as the frame transports abort theirs and close.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ServiceUnavailableException } from '../errors.js'
import { replyWithError } from './error-reply.js'
import { SHUTDOWN_MESSAGE } from './sse.js'

export function abortOnClientClose(reply: FastifyReply, controller: AbortController): AbortSignal {
  // The response's `close` (not the request's: that fires once the body is read) tells that the
  // client went away before the answer was written.
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('client closed the request'))
  })
  return controller.signal
}

/** One unary call in flight over HTTP. */
export class HttpCallInFlight {
  controller: AbortController | undefined
  /** Set once the grace has passed: the call was answered with the 503, its late result is dropped. */
  cut = false

  constructor(
    readonly request: FastifyRequest,
    readonly reply: FastifyReply,
  ) {}

  /** The call's signal, made on first use: aborts when the client goes away or the grace passes. */
  signal(): AbortSignal {
    if (this.controller === undefined) {
      const controller = new AbortController()
      this.controller = controller
      if (this.cut) controller.abort(new ServiceUnavailableException(SHUTDOWN_MESSAGE))
      abortOnClientClose(this.reply, controller)
    }
    return this.controller.signal
  }
}

export class HttpDrain {
  readonly #calls = new Set<HttpCallInFlight>()
  #timer: NodeJS.Timeout | undefined
  /** When the grace ends (set by `shutdown`). */
  #cutAt: number | undefined

  constructor(private readonly graceMs: number) {}

  track(request: FastifyRequest, reply: FastifyReply): HttpCallInFlight {
    return new HttpCallInFlight(request, reply)
  }

  /** The call did not answer in its first turn: it counts until it settles. */
  running(call: HttpCallInFlight): void {
    this.#calls.add(call)
    // Routed before the shutdown, its handler started during the drain: the same grace ends it.
    if (this.#cutAt !== undefined) this.#arm()
  }

  settled(call: HttpCallInFlight): void {
    this.#calls.delete(call)
  }

  /** At `preClose`: the calls in flight get the grace, then are cut. */
  shutdown(): void {
    this.#cutAt ??= Date.now() + this.graceMs
    this.#arm()
  }

  #arm(): void {
    if (this.#timer !== undefined || this.#calls.size === 0 || this.#cutAt === undefined) return
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined
        this.#cut()
      },
      Math.max(0, this.#cutAt - Date.now()),
    )
    // A drained server closes before the timer: it must not hold the process.
    this.#timer.unref()
  }

  #cut(): void {
    const error = new ServiceUnavailableException(SHUTDOWN_MESSAGE)
    for (const call of this.#calls) {
      call.cut = true
      call.controller?.abort(error)
      const { request, reply } = call
      if (reply.sent || reply.raw.destroyed) continue
      request.log.warn({ requestId: request.id }, 'call still running after the shutdown grace: aborted')
      if (request.raw.httpVersionMajor === 1) reply.header('connection', 'close') // HTTP/2 forbids it
      replyWithError(error, request, reply)
    }
    this.#calls.clear()
  }
}
