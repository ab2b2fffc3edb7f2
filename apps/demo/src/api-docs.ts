// `/docs`: Swagger UI (@fastify/swagger in static mode with the document @trivium/openapi builds, plus
// @fastify/swagger-ui), with "Authorize" (bearer token) and "Try it out" against this server. The
// document exists only at ready time, so @fastify/swagger gets an object that is filled in then.
import fastifySwagger from '@fastify/swagger'
import fastifySwaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

export const DOCS_PATH = '/docs'
export const DOCS_TITLE = 'Trivium Tasks API'
/** Swagger UI loads only its own files from this server (no CDN); images it draws are data: URIs. */
export const DOCS_CSP =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; object-src 'none'; frame-ancestors 'none'"
const STATIC_INDEX = `${DOCS_PATH}/static/index.html`

// @fastify/swagger-ui redirects its static index.html to the docs page by replacing the URL's ending, so
// with a query string it redirects to itself forever: redirected once to the docs page here, query kept
// (Swagger UI reads its own parameters from it). Runs on the Swagger UI routes only.
function canonicalIndex(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  if (request.routeOptions.url !== STATIC_INDEX) {
    done()
    return
  }
  const query = request.url.indexOf('?')
  reply.redirect(`${DOCS_PATH}/${query === -1 ? '' : request.url.slice(query)}`)
}

export async function registerApiDocs(app: FastifyInstance): Promise<void> {
  const document: Record<string, unknown> = { openapi: '3.1.0', info: { title: '', version: '' }, paths: {} }
  await app.register(fastifySwagger, { mode: 'static', specification: { document: document as never } })
  await app.register(fastifySwaggerUi, {
    routePrefix: DOCS_PATH,
    // BaseLayout: no top bar (Fastify's logo linking away, the URL box); the page starts with the
    // document's own title, then Authorize (the bearer header only: @trivium/openapi's default).
    uiConfig: { persistAuthorization: false, deepLinking: true, layout: 'BaseLayout' },
    theme: { title: DOCS_TITLE },
    staticCSP: DOCS_CSP,
    transformStaticCSP: (header) => header,
    uiHooks: { onRequest: canonicalIndex },
  })
  app.addHook('onReady', async () => {
    Object.assign(document, app.openapi())
  })
}
