// A streaming named route's call on a frame connection (PROTOCOL.md "Named routes"): the route runs as
// for an HTTP request, asked with `Accept: <its stream type>`; a 2xx answer of that type (NDJSON lines or
// Server-Sent Events, written as a Node stream or web ReadableStream the route sends) is read as the route
// writes it, each line or event's data parsed as JSON, checked against the item schema and sent as a
// STREAM_ITEM. The route's stream waits while the reader is behind (`write` returns false until the
// frames are sent: the same high-water mark as a stream endpoint). A CANCEL, the connection's close, the
// call's deadline or an item frames cannot carry destroys the route's request: Fastify then destroys the
// route's stream (its generator's `finally` runs). Any other answer (an error, a JSON body) is the unary
// rule's.
import type { EndpointDefinition, TriviumCall } from '@trivium/core'
import { InternalErrorException, TimeoutException, ValidationException } from '@trivium/core'
import { INTERNAL_ERROR_MESSAGE, jsonFormat, namedRouteStream } from '@trivium/core/internal'
import {
  deadlineExceededMessage,
  FrameType,
  invalidTimeoutMessage,
  parseTimeoutMs,
  TIMEOUT_METADATA_KEY,
} from '@trivium/wire'
import type { InjectBridge, RouteAnswer } from './route-bridge.js'
import { pumpStream } from './server-stream.js'
import { bridgedOverride, type CallHost, type CallStart, failed } from './unary.js'

/**
 * Where a streaming named route's answer goes as the route writes it (named-route-stream.ts): a 2xx
 * answer of the stream type is handed over chunk by chunk; any other answer is collected as usual.
 */
export interface StreamSink {
  /** The Accept header the route is asked with (the stream's content type). */
  readonly accept: string
  /** The answer's head: true takes its body as a stream. */
  open(statusCode: number, contentType: string | undefined): boolean
  /** One chunk; false when the reader is behind (the route's stream then waits for `drain`). */
  write(chunk: Buffer, drain: () => void): boolean
  end(): void
}

/** Bytes the reader holds before the route's stream is told to wait. */
const READ_AHEAD = 64 * 1024

/** The route's streamed body as it is written: chunks queued for the item reader, with backpressure. */
class RouteStream implements StreamSink, AsyncIterable<Buffer> {
  contentType = ''
  readonly opened: Promise<boolean>
  #open: ((streamed: boolean) => void) | undefined
  #refuse: ((err: unknown) => void) | undefined
  #chunks: Buffer[] = []
  #bytes = 0
  #ended = false
  #error: unknown = undefined
  #wake: (() => void) | undefined = undefined
  #drain: (() => void) | undefined = undefined

  constructor(readonly accept: string) {
    this.opened = new Promise((resolve, reject) => {
      this.#open = resolve
      this.#refuse = reject
    })
  }

  open(statusCode: number, contentType: string | undefined): boolean {
    const type = contentType?.split(';', 1)[0]?.trim().toLowerCase()
    const streamed = statusCode >= 200 && statusCode < 300 && type === this.accept
    if (streamed) this.contentType = type
    this.#settleHead(streamed)
    return streamed
  }

  write(chunk: Buffer, drain: () => void): boolean {
    this.#chunks.push(chunk)
    this.#bytes += chunk.length
    this.#wakeReader()
    if (this.#bytes <= READ_AHEAD) return true
    this.#drain = drain
    return false
  }

  end(): void {
    this.#ended = true
    this.#wakeReader()
  }

  /** The route's request is over: a stream not ended by the route was cut (its stream failed, or it was aborted). */
  closed(): void {
    this.#settleHead(false)
    if (!this.#ended) this.fail(new InternalErrorException(INTERNAL_ERROR_MESSAGE))
  }

  fail(err: unknown): void {
    this.#refuse?.(err)
    this.#open = this.#refuse = undefined
    if (this.#error === undefined && !this.#ended) this.#error = err
    this.#wakeReader()
  }

  #settleHead(streamed: boolean): void {
    this.#open?.(streamed)
    this.#open = this.#refuse = undefined
  }

  #wakeReader(): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    while (true) {
      const chunk = this.#chunks.shift()
      if (chunk !== undefined) {
        this.#bytes -= chunk.length
        if (this.#bytes <= READ_AHEAD / 2 && this.#drain !== undefined) {
          const drain = this.#drain
          this.#drain = undefined
          drain()
        }
        yield chunk
        continue
      }
      if (this.#error !== undefined) throw this.#error
      if (this.#ended) return
      await new Promise<void>((resolve) => {
        this.#wake = resolve
      })
    }
  }
}

/** The JSON texts of the stream: one per NDJSON line, one per SSE event's `data` (its lines joined by "\n"). */
async function* jsonTexts(stream: RouteStream): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  const sse = stream.contentType === 'text/event-stream'
  const separator = sse ? '\n\n' : '\n'
  let text = ''
  for await (const chunk of stream) {
    text += decoder.decode(chunk, { stream: true })
    if (sse) text = text.replace(/\r\n?/g, '\n')
    let cut = text.indexOf(separator)
    while (cut >= 0) {
      const part = text.slice(0, cut)
      text = text.slice(cut + separator.length)
      const json = sse ? eventData(part) : part.trim()
      if (json !== undefined && json.length > 0) yield json
      cut = text.indexOf(separator)
    }
  }
  text += decoder.decode()
  const last = sse ? eventData(text) : text.trim()
  if (last !== undefined && last.length > 0) yield last
}

/** An SSE event's data (comments, `event`, `id` and `retry` are not carried); undefined without data. */
function eventData(event: string): string | undefined {
  const data: string[] = []
  for (const line of event.split('\n')) {
    if (!line.startsWith('data')) continue
    const colon = line.indexOf(':')
    if (colon < 0 ? line !== 'data' : colon !== 4) continue
    const value = colon < 0 ? '' : line.slice(colon + 1)
    data.push(value.startsWith(' ') ? value.slice(1) : value)
  }
  return data.length === 0 ? undefined : data.join('\n')
}

/** The route's items, each checked by the item model; an item frames cannot carry is the route's fault (500). */
async function* routeItems(
  stream: RouteStream,
  definition: EndpointDefinition,
  host: CallHost,
  requestId: string,
): AsyncGenerator<unknown> {
  let index = 0
  const fault = (reason: string): InternalErrorException => {
    host.session.log.error(
      { endpoint: definition.name, requestId, item: index },
      `named route ${definition.name} streamed an item frames cannot carry (${reason}): write one JSON value per ${stream.contentType === 'text/event-stream' ? 'event' : 'line'}, matching its item schema`,
    )
    return new InternalErrorException(INTERNAL_ERROR_MESSAGE)
  }
  const texts = jsonTexts(stream)
  while (true) {
    let step: IteratorResult<string>
    try {
      step = await texts.next()
    } catch (err) {
      if (err instanceof TypeError) throw fault('not UTF-8')
      throw err
    }
    if (step.done) return
    let value: unknown
    try {
      value = JSON.parse(step.value)
    } catch {
      throw fault('not JSON')
    }
    try {
      yield definition.response.fromJSON(value)
    } catch (err) {
      if (err instanceof ValidationException) throw fault(err.message)
      throw err
    }
    index++
  }
}

/** The call's deadline in ms (the frame's `timeout_ms`); undefined without one. */
function deadlineOf(start: CallStart, definition: EndpointDefinition): number | undefined {
  const raw = start.metadata?.[TIMEOUT_METADATA_KEY]
  const client = raw === undefined ? undefined : parseTimeoutMs(raw)
  if (raw !== undefined && client === undefined)
    throw new ValidationException(invalidTimeoutMessage('metadata'))
  const own = definition.timeoutMs
  if (client === undefined) return own
  return own === undefined ? client : Math.min(client, own)
}

/** Runs one call of a streaming named route through the route, its items sent as they are written. */
export async function runNamedStream(
  host: CallHost,
  start: CallStart,
  requestId: string,
  bridge: InjectBridge,
  credential: string | undefined,
): Promise<void> {
  const { id, entry } = start
  const definition = start.definition as EndpointDefinition
  const stream = new RouteStream(namedRouteStream(definition) ?? 'application/x-ndjson')
  let answered: TriviumCall | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    const ms = deadlineOf(start, definition)
    const route = bridge.call(
      {
        definition,
        format: start.format,
        accept: jsonFormat,
        payload: start.payload,
        override: bridgedOverride(host, start, credential),
        entry,
        requestId,
      },
      undefined,
      stream,
    ) as Promise<RouteAnswer>
    route.then(
      (out) => {
        answered = out.call
        stream.closed()
      },
      (err: unknown) => stream.fail(err),
    )
    if (ms !== undefined) {
      timer = setTimeout(() => {
        const late = new TimeoutException(deadlineExceededMessage(ms))
        stream.fail(late)
        entry.onAbort?.(late) // the route's request is destroyed: its stream with it
      }, ms)
    }
    if (!(await stream.opened)) {
      // Not streamed: the route's error (or a 2xx that is not its stream, the route's fault).
      // named-route-answer.ts made a 2xx that is not the stream the route's fault (500).
      const out = await route
      if (entry.aborted) throw entry.reason // answered only for the shutdown (failed())
      if (out.statusCode === 0 || !host.carrier.open) return
      host.compression.send(out.ok ? FrameType.STREAM_END : FrameType.ERROR, id, out.body)
      return
    }
    const items = routeItems(stream, definition, host, requestId)
    try {
      await pumpStream({
        id,
        definition,
        format: jsonFormat,
        items,
        signal: entry.signal,
        carrier: host.carrier,
        send: host.compression.send.bind(host.compression),
        highWaterMark: host.ctx.options.highWaterMark,
        shutdownError: host.ctx.shutdownError,
      })
    } finally {
      // Stopped before the route's end (cancel, close, a bad item): the route's request and stream go.
      entry.onAbort?.(new Error('stream stopped'))
    }
    await route
  } catch (err) {
    failed(host, id, err, entry)
  } finally {
    clearTimeout(timer)
    host.calls.release(id, entry, answered)
  }
}
