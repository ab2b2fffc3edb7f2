// `/docs`: Swagger UI (@fastify/swagger in static mode with the document @trivium/openapi builds, plus
// @fastify/swagger-ui), with "Authorize" (bearer token) and "Try it out" against this server. The
// document exists only at ready time, so @fastify/swagger gets an object that is filled in then.
import fastifySwagger from '@fastify/swagger'
import fastifySwaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'

export const DOCS_PATH = '/docs'

export async function registerApiDocs(app: FastifyInstance): Promise<void> {
  const document: Record<string, unknown> = { openapi: '3.1.0', info: { title: '', version: '' }, paths: {} }
  await app.register(fastifySwagger, { mode: 'static', specification: { document: document as never } })
  await app.register(fastifySwaggerUi, {
    routePrefix: DOCS_PATH,
    uiConfig: { persistAuthorization: false, deepLinking: true },
    // Swagger UI loads only its own files from this server (no CDN); images it draws are data: URIs.
    staticCSP:
      "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; object-src 'none'; frame-ancestors 'none'",
    transformStaticCSP: (header) => header,
  })
  app.addHook('onReady', async () => {
    Object.assign(document, app.openapi())
  })
}
