// GET /metrics: on the app's own server (optionally behind a bearer token) or on a separate listen
// address that only the scraper can reach.
import { timingSafeEqual } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { toErrorBody, UnauthorizedException } from '@trivium/core'
import type { FastifyInstance } from 'fastify'
import type { Registry } from 'prom-client'

export const METRICS_TOKEN_MESSAGE = 'Metrics need a valid bearer token'

/** Constant-time check of `Authorization: Bearer <token>`. */
export function bearerMatches(header: string | undefined, token: Buffer): boolean {
  if (typeof header !== 'string' || !header.startsWith('Bearer ')) return false
  const given = Buffer.from(header.slice(7))
  // Compare equal lengths only; the length of a secret token is not worth hiding.
  return given.length === token.length && timingSafeEqual(given, token)
}

export function metricsRoute(
  fastify: FastifyInstance,
  registry: Registry,
  path: string,
  token?: Buffer,
): void {
  fastify.get(path, { logLevel: 'warn' }, async (request, reply) => {
    if (token && !bearerMatches(request.headers.authorization, token)) {
      const error = new UnauthorizedException(METRICS_TOKEN_MESSAGE)
      return reply.code(401).header('www-authenticate', 'Bearer').send(toErrorBody(error, request.id))
    }
    return reply.type(registry.contentType).send(await registry.metrics())
  })
}

/** A plain HTTP server answering only GET <path>, for a listen address apart from the API's. */
export async function metricsServer(
  registry: Registry,
  path: string,
  host: string,
  port: number,
  token?: Buffer,
): Promise<{ server: Server; address: AddressInfo }> {
  const server = createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0]
    if (req.method !== 'GET' || url !== path) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found')
      return
    }
    if (token && !bearerMatches(req.headers.authorization, token)) {
      res
        .writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' })
        .end(JSON.stringify(toErrorBody(new UnauthorizedException(METRICS_TOKEN_MESSAGE))))
      return
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  return { server, address: server.address() as AddressInfo }
}
