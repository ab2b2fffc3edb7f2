import type { FastifyReply, FastifyRequest } from 'fastify'

/** Guards one request to a route added before @trivium/core: `done()` to go on, or answer the reply. */
export type EarlyRouteGuard = (
  rules: object,
  request: FastifyRequest,
  reply: FastifyReply,
  done: (err?: Error) => void,
) => void
