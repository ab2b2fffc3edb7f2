// The stream endpoints the HTTP/2 stream tests share: `sum` (a client stream: the sum and count of its
// ticks) and `double` (bidirectional: each tick doubled), on the model `Tick { i: integer }`.
import { jsonSchemaModel } from '../../packages/core/dist/index.js'

export const Tick = jsonSchemaModel<{ i: number }>('Tick', {
  type: 'object',
  properties: { i: { type: 'integer' } },
  required: ['i'],
  additionalProperties: false,
})

/** The part of a Fastify app with @trivium/core these need (scripts/ cannot resolve `fastify` itself). */
interface StreamsHost {
  trivium: {
    clientStream(name: string, options: object, handler: (requests: AsyncIterable<any>) => unknown): unknown
    bidiStream(name: string, options: object, handler: (requests: AsyncIterable<any>) => unknown): unknown
  }
}

export function registerTickStreams(app: StreamsHost, sumOptions: { bodyLimit?: number } = {}): void {
  app.trivium.clientStream(
    'sum',
    { method: 'POST', url: '/sum', request: Tick, ...sumOptions },
    async (requests: AsyncIterable<{ i: number }>) => {
      let sum = 0
      let count = 0
      for await (const tick of requests) {
        sum += tick.i
        count++
      }
      return { sum, count }
    },
  )
  app.trivium.bidiStream(
    'double',
    { method: 'POST', url: '/double', request: Tick },
    async function* (requests: AsyncIterable<{ i: number }>) {
      for await (const tick of requests) yield { i: tick.i * 2 }
    },
  )
}
