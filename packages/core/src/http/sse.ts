// HTTP transport of streaming endpoints: Server-Sent Events, one JSON item per `item` event,
// then `end`, or `error` with the error body (PROTOCOL.md "HTTP streaming").
import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { normalizeError, toErrorBody } from '../errors.js'
import type { WireFormat } from '../formats.js'
import type { EndpointDefinition } from '../registry.js'

export function sendEventStream(
  request: FastifyRequest,
  reply: FastifyReply,
  definition: EndpointDefinition,
  format: WireFormat,
  items: AsyncIterable<unknown>,
): FastifyReply {
  async function* events(): AsyncGenerator<string> {
    let id = 0
    const iterator = items[Symbol.asyncIterator]()
    // A comment first, so the status and headers reach the client now, not with the first item.
    yield ': stream open\n\n'
    try {
      while (true) {
        const step = await iterator.next()
        if (step.done) break
        const data = format.encode(definition.response, step.value)
        yield `id: ${id++}\nevent: item\ndata: ${typeof data === 'string' ? data : Buffer.from(data).toString('utf8')}\n\n`
      }
      yield 'event: end\ndata: {}\n\n'
    } catch (err) {
      const { error, internal } = normalizeError(err)
      if (internal) request.log.error({ err, requestId: request.id }, 'unhandled error in stream')
      yield `event: error\ndata: ${JSON.stringify(toErrorBody(error, request.id))}\n\n`
    } finally {
      // Runs when the client goes away too (Readable.from destroys the generator): stop the handler.
      await iterator.return?.()
    }
  }
  return reply
    .code(200)
    .header('cache-control', 'no-cache')
    .type('text/event-stream; charset=utf-8')
    .send(Readable.from(events()))
}
