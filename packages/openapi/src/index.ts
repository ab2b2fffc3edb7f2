// @trivium/openapi — builds the OpenAPI 3.1 document of `fastify.trivium.registry` at ready time and
// serves it, with a self-contained HTML docs page (no script, nothing loaded from elsewhere).
import { BINARY_CONTENT_TYPE, optionNames, refuseUnknownOptions } from '@trivium/core/internal'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { DOCS_CSP, renderDocsPage } from './docs-page.js'
import { buildOpenApi, type OpenApiDocument, type OpenApiInfo, type OpenApiServer } from './document.js'
import { SETUP } from './setup-errors.js'

export { DOCS_CSP, type DocsPageOptions, escapeHtml, renderDocsPage } from './docs-page.js'
export {
  BINARY_MEDIA_TYPE,
  type BuildOptions,
  buildOpenApi,
  ERROR_BODY_SCHEMA,
  ERROR_RESPONSES,
  JSON_MEDIA_TYPE,
  type OpenApiDocument,
  type OpenApiInfo,
  type OpenApiOperation,
  type OpenApiServer,
  SECURITY_SCHEMES,
  SSE_MEDIA_TYPE,
  toOpenApiPath,
} from './document.js'
export { componentName, type RegisteredModel, SchemaComponents } from './schemas.js'

export interface TriviumOpenApiOptions {
  /** Where the JSON document is served (default `/openapi.json`). */
  path?: string
  /** Where the HTML docs page is served (default `/docs`); `false` serves none. */
  docsPath?: string | false
  info: OpenApiInfo
  servers?: OpenApiServer[]
  /** Document authentication; default: whether `@trivium/auth` is registered at ready time. */
  auth?: boolean
  /** Document the binary format; default: whether it is registered (`@trivium/codec`) at ready time. */
  binary?: boolean
  /** Also document the `token` query parameter, which @trivium/auth accepts, as a way to send the token (default true). */
  tokenQuery?: boolean
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The OpenAPI document built at ready time (throws before). */
    openapi(): OpenApiDocument
  }
}

const PREFIX = '@trivium/openapi: '

function checkPath(value: unknown, what: string): string {
  if (typeof value !== 'string' || !value.startsWith('/') || /[\s?#]/.test(value)) {
    throw SETUP.TRV_OPENAPI_PATH(what)
  }
  return value
}

interface ValidOptions {
  path: string
  docsPath: string | false
  info: OpenApiInfo
  servers: OpenApiServer[] | undefined
  auth: boolean | undefined
  binary: boolean | undefined
  tokenQuery: boolean
}

/** Every option name of the plugin: any other is refused with the nearest one named. */
const OPENAPI_OPTIONS = optionNames<TriviumOpenApiOptions>()(
  'path',
  'docsPath',
  'info',
  'servers',
  'auth',
  'binary',
  'tokenQuery',
)

function validateOptions(options: TriviumOpenApiOptions): ValidOptions {
  if (typeof options !== 'object' || options === null) throw SETUP.TRV_OPENAPI_OPTIONS()
  refuseUnknownOptions('@trivium/openapi', options, OPENAPI_OPTIONS)
  const path = checkPath(options.path ?? '/openapi.json', 'path')
  const docsPath = options.docsPath === false ? false : checkPath(options.docsPath ?? '/docs', 'docsPath')
  if (docsPath === path) throw SETUP.TRV_OPENAPI_DOCS_PATH()
  const info = options.info
  if (typeof info !== 'object' || info === null) throw SETUP.TRV_OPENAPI_INFO()
  if (typeof info.title !== 'string' || info.title.length === 0) throw SETUP.TRV_OPENAPI_INFO_TITLE()
  if (typeof info.version !== 'string' || info.version.length === 0) throw SETUP.TRV_OPENAPI_INFO_VERSION()
  if (info.description !== undefined && typeof info.description !== 'string')
    throw SETUP.TRV_OPENAPI_INFO_DESCRIPTION()
  const servers = options.servers
  if (servers !== undefined) {
    if (!Array.isArray(servers)) throw SETUP.TRV_OPENAPI_SERVERS()
    for (const server of servers) {
      if (
        typeof server !== 'object' ||
        server === null ||
        typeof server.url !== 'string' ||
        server.url === ''
      )
        throw SETUP.TRV_OPENAPI_SERVER_URL()
      if (server.description !== undefined && typeof server.description !== 'string')
        throw SETUP.TRV_OPENAPI_SERVER_DESCRIPTION()
    }
  }
  for (const flag of ['auth', 'binary', 'tokenQuery'] as const) {
    if (options[flag] !== undefined && typeof options[flag] !== 'boolean') throw SETUP.TRV_OPENAPI_FLAG(flag)
  }
  return {
    path,
    docsPath,
    info: { ...info },
    servers: servers?.map((s) => ({ ...s })),
    auth: options.auth,
    binary: options.binary,
    tokenQuery: options.tokenQuery ?? true,
  }
}

const openApi: FastifyPluginAsync<TriviumOpenApiOptions> = async (fastify: FastifyInstance, rawOptions) => {
  const options = validateOptions(rawOptions)
  let json: string | undefined
  let html: string | undefined
  let document: OpenApiDocument | undefined

  fastify.decorate('openapi', () => {
    if (!document) throw new Error(`${PREFIX}the document is built when the server is ready`)
    return document
  })

  // Trivium's own routes (`triviumOwned`): @trivium/protections' security headers and CORS apply to them
  // with its guest defaults as to endpoints.
  const config = { triviumOwned: true }
  fastify.get(options.path, { config }, (_request: FastifyRequest, reply: FastifyReply) => {
    reply.type('application/json; charset=utf-8').send(json)
  })

  if (options.docsPath !== false) {
    fastify.get(options.docsPath, {
      config,
      // Route-level onSend runs after the app's (e.g. security headers): the page's own policy wins.
      onSend: (_request, reply, payload, done) => {
        reply.header('Content-Security-Policy', DOCS_CSP)
        done(null, payload)
      },
      handler: (_request: FastifyRequest, reply: FastifyReply) => {
        reply.type('text/html; charset=utf-8').send(html)
      },
    })
  }

  fastify.addHook('onReady', async () => {
    const trivium = fastify.trivium
    document = buildOpenApi(trivium.registry, options.info, {
      servers: options.servers,
      auth: options.auth ?? fastify.hasPlugin('@trivium/auth'),
      binary: options.binary ?? trivium.formats.contentTypes().includes(BINARY_CONTENT_TYPE),
      tokenQuery: options.tokenQuery,
    })
    json = JSON.stringify(document)
    if (options.docsPath !== false) html = renderDocsPage(document, { documentPath: options.path })
  })
}

export const triviumOpenApi = fp(openApi, {
  fastify: '^5.12.1',
  name: '@trivium/openapi',
  dependencies: ['@trivium/core'],
})
export default triviumOpenApi
