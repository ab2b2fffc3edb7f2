// Builds "Trivium Tasks": every Trivium plugin on one Fastify instance, in this order:
//   core → codec (binary format) → auth (middleware `auth`) → rbac (`rbac`, after auth)
//   → protections (CORS, security headers, `rate-limit` after auth) → websocket + tcp → openapi
//   → the schema's endpoints → the web page.
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import triviumAuth, {
  type AuthFlows,
  RedisRevocationStore,
  type RevocationStore,
  TOKEN_REVOKED,
} from '@trivium/auth'
import {
  SingleWriterSqlRevocationStore,
  SqlRevocationStore,
  SqlTokenLedger,
  SqlUserStore,
} from '@trivium/auth/sql'
import triviumCodec from '@trivium/codec'
import triviumCore, {
  idempotency,
  redactingRequestSerializer,
  SqlIdempotencyStore,
  triviumFactoryOptions,
  triviumHttp2Options,
  ValidationException,
  websocketCredential,
} from '@trivium/core'
import triviumMetrics from '@trivium/metrics'
import triviumOpenApi from '@trivium/openapi'
import triviumProtections, { originMatcher } from '@trivium/protections'
import triviumRbac, { RbacService } from '@trivium/rbac'
import type { SqlClient } from '@trivium/sql'
import triviumTcp from '@trivium/tcp'
import triviumTracing from '@trivium/tracing'
import triviumWebSocket from '@trivium/websocket'
import Fastify, { type FastifyInstance } from 'fastify'
import { accessLog } from './access-log.js'
import { registerApiDocs } from './api-docs.js'
import { ConfigError, type DemoConfig } from './config.js'
import { textContract } from './contract.js'
import { openDatabase } from './database.js'
import { adminHandlers } from './endpoints/admin.js'
import { authHandlers } from './endpoints/auth.js'
import type { HandlerContext } from './endpoints/context.js'
import { healthHandlers, VERSION } from './endpoints/health.js'
import { taskHandlers } from './endpoints/tasks.js'
import { textHandlers } from './endpoints/text.js'
import { refuseNulText } from './endpoints/text-rule.js'
import { type Fanout, localFanout, redisFanout } from './fanout.js'
import { type EndpointHandlers, registerEndpoints } from './generated/server.js'
import { metricsPage } from './metrics-page.js'
import { metricsRoute, operatorCheck } from './operator.js'
import { readinessRoute } from './readiness.js'
import { type RedisClient, type RedisTopology, redisHealthy, resolveRedis } from './redis-topology.js'
import { ensureRights } from './rights.js'
import { loadSecrets, type Secrets } from './secrets.js'
import { addRightsChange, fromStored, OutboxRelay } from './tasks/outbox.js'
import { TaskRepository } from './tasks/repository.js'

const here = dirname(fileURLToPath(import.meta.url))
export interface DemoApp {
  app: FastifyInstance
  sql: SqlClient
  /** The admin password when it was generated on this start (printed once by server.ts). */
  generatedAdminPassword: string | undefined
}

export async function buildApp(config: DemoConfig, logStream?: NodeJS.WritableStream): Promise<DemoApp> {
  const app = createServer(config, logStream)
  const secrets = loadSecrets(config, (message) => app.log.warn(message))
  const backends = await openBackends(app, config)
  await registerCore(app, config)
  await registerObservability(app, config, backends)
  const flows = await registerAuth(app, config, secrets, backends)
  await registerRbac(app, backends.sql)
  await registerProtections(app, config, backends.redis)
  await registerTransports(app, config, backends.fanout)
  await registerOpenApi(app)
  const context = await prepareHandlerContext(app, config, backends, flows)
  registerDemoEndpoints(app, config, context, backends)
  await servePages(app, config, backends)
  const generatedAdminPassword = await ensureAdmin(flows, backends.sql, config, context.roleIds.admin)
  return { app, sql: backends.sql, generatedAdminPassword }
}

/** What the plugins and handlers share: PostgreSQL, Redis (when one is configured) and the fan-out. */
interface Backends {
  sql: SqlClient
  redis: RedisClient | undefined
  topology: RedisTopology | undefined
  fanout: Fanout
}

function createServer(config: DemoConfig, stream?: NodeJS.WritableStream): FastifyInstance {
  const http2 = config.http2 === undefined ? undefined : triviumHttp2Options(config.http2)
  // Fastify's types make an HTTP/2 instance a type of its own; every plugin serves both alike.
  return Fastify({
    // Node's client errors and Fastify's router errors with the error body and the security headers.
    ...triviumFactoryOptions(),
    // HTTP2=1 / HTTP2=h2c: HTTP/2 with Trivium's limits for hostile peers (PROTOCOL.md "HTTP/2").
    ...http2,
    // `url` with ?token= (the WebSocket upgrade's credential) and other secret parameters redacted.
    logger: {
      level: config.logLevel,
      ...(stream ? { stream } : {}),
      redact: ['req.headers.authorization', 'req.query.token'],
      serializers: { req: redactingRequestSerializer() },
    },
    trustProxy: config.trustProxy,
    bodyLimit: config.bodyLimit,
    // @trivium/core refuses an HTTP/1.1 request without Host with the error body and the security
    // headers; Node's own check would answer first, with an empty 400.
    http: { ...(http2 && 'http' in http2 ? http2.http : {}), requireHostHeader: false },
    // Shutdown (README "Graceful shutdown"): idle keep-alive connections are closed at once; a call that
    // arrives during the drain reaches @trivium/core, which answers the 503 error body (Fastify's own
    // 503 would be a plain `{"error":"Service Unavailable"}`); both with `Connection: close`.
    // (An h2c server has no HTTP/1 connections: @trivium/core closes its HTTP/2 sessions instead.)
    forceCloseConnections: config.http2 === 'h2c' ? false : 'idle',
    return503OnClosing: false,
  } as Parameters<typeof Fastify>[0]) as unknown as FastifyInstance
}

/** Opens the database, Redis and the fan-out between instances; `app.close()` closes them. */
async function openBackends(app: FastifyInstance, config: DemoConfig): Promise<Backends> {
  const sql = await openDatabase(config)
  app.addHook('onClose', async () => sql.close())
  const topology = resolveRedis(config.redisUrl, config.redisSettings)
  if (topology) {
    // A bad Redis setting is refused here in one line, before the stores' clients retry it.
    await topology.check().catch(async (err) => {
      await sql.close()
      throw err
    })
  }
  const redis = topology?.create()
  if (redis) {
    redis.on('error', () => {}) // outages are reported by the stores that use it, once
    app.addHook('onClose', async () => {
      redis.disconnect()
    })
  }
  const fanout: Fanout = topology
    ? redisFanout(topology.template(), config.redisPrefix, app.log)
    : localFanout()
  app.addHook('onClose', async () => fanout.close())
  return { sql, redis, topology, fanout }
}

async function registerCore(app: FastifyInstance, config: DemoConfig): Promise<void> {
  // The demo owns its whole app, so it asks core for whole-app answers (a guest's defaults leave them to
  // the application): the error body on every route and unknown path, and below the routes. Compression is
  // on unless COMPRESSION=off (a proxy in front compresses): a 100-task list is ~7.8 KB of JSON.
  await app.register(triviumCore, {
    bodyLimit: config.bodyLimit,
    compression: config.compression,
    errorHandler: true,
    notFoundHandler: true,
  })
  await app.register(triviumCodec)
}

async function registerObservability(
  app: FastifyInstance,
  config: DemoConfig,
  { sql, redis }: Backends,
): Promise<void> {
  // Spans go nowhere unless server.ts installed the SDK (OTEL_EXPORTER_OTLP_ENDPOINT).
  await app.register(triviumTracing)
  // GET /metrics: on a separate address (METRICS_LISTEN, only the scraper reaches it; METRICS_TOKEN if
  // set), else the demo's own route on the API's port (operator.ts: METRICS_TOKEN or a live admin).
  const listen = config.metrics ? config.metricsListen : undefined
  await app.register(triviumMetrics, {
    listen,
    token: listen ? config.metricsToken : undefined,
    redis: redis ? { redis } : undefined,
    pool: sql.pool,
    // Memory, CPU, event-loop lag, handles, GC: the figures an operator needs to see a leak or a stall.
    defaultMetrics: true,
  })
  if (config.accessLog) app.trivium.use(accessLog(), { name: 'access-log', first: true })
}

/** Tokens, revocation and the credential flows (served by the demo's own endpoints, auth.ts). */
/**
 * The database is the revocation list's source of truth (PROTOCOL.md "What each store configuration
 * keeps"): a revoked token stays refused across a restart or data loss of Redis or of an instance.
 */
async function revocationStoreFor(
  config: DemoConfig,
  sql: SqlClient,
  redis: RedisClient | undefined,
  fanout: Fanout,
): Promise<RevocationStore> {
  const durable = new SqlRevocationStore({ client: sql })
  if (redis !== undefined) {
    return new RedisRevocationStore({
      client: redis,
      // The spec's default key is blacklist:token:<jti>; a deployment prefix goes in front of it.
      prefix: process.env.REDIS_PREFIX ? `${config.redisPrefix}blacklist:token:` : undefined,
      // Lookups answered from an in-memory copy kept current over the fan-out's Redis pub/sub:
      // no Redis round trip per request (auth README "Revocation list", PROTOCOL.md); the copy and the
      // Redis keys are rebuilt from the database whenever they may be incomplete.
      mirror: fanout.revocationList ? { channel: fanout.revocationList } : undefined,
      durable: fanout.revocationList ? durable : undefined,
    })
  }
  if (config.databaseUrl !== undefined) return durable // several instances may write: ask the table
  // Embedded PGlite: this process is the database's only writer, so the whole table is held in memory
  // (no query per request) and every revocation is written through to it.
  const embedded = new SingleWriterSqlRevocationStore({ client: sql })
  await embedded.migrate()
  await embedded.load()
  return embedded
}

async function registerAuth(
  app: FastifyInstance,
  config: DemoConfig,
  secrets: Secrets,
  { sql, redis, fanout }: Backends,
): Promise<AuthFlows> {
  const revocationStore = await revocationStoreFor(config, sql, redis, fanout)
  if (revocationStore instanceof RedisRevocationStore) app.addHook('onClose', () => revocationStore.close())
  await app.register(triviumAuth, {
    secret: secrets.signingSecret,
    issuer: 'trivium-tasks',
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
    revocationStore,
    rolesProvider: (userId) => app.rbac.getUserRights(userId),
    ledger: new SqlTokenLedger(sql),
    // Every revocation (logout, a reused refresh token revoking all of a user's tokens) closes the
    // matching WebSocket/TCP sessions and event streams on every instance (the revocation list only stops
    // the next frame): on this one before the revocation is answered, on the others on its announcement.
    onRevoked: ({ tokenId, userId }) => {
      closeRevokedSessions(app, { tokenId, userId })
      return fanout.announceRevocation({ tokenId, userId })
    },
    flows: {
      users: new SqlUserStore(sql),
      encryptionKey: secrets.encryptionKey,
      registerEndpoints: false,
      totpIssuer: 'Trivium Tasks',
    },
  })
  // Decorated because `flows` is given above; checked once here so the rest of the app holds AuthFlows.
  const flows = app.authFlows
  if (flows === undefined)
    throw new Error('@trivium/auth did not decorate fastify.authFlows although flows were given')
  return flows
}

async function registerRbac(app: FastifyInstance, sql: SqlClient): Promise<void> {
  // Users are auth's table: assigning a role to an id that is not a user is a 404 (and a foreign key).
  await app.register(triviumRbac, { sql, usersTable: 'auth_users' })
}

async function registerProtections(
  app: FastifyInstance,
  config: DemoConfig,
  redis: RedisClient | undefined,
): Promise<void> {
  await app.register(triviumProtections, {
    cors: {
      allowedOrigins: config.corsOrigins,
      allowCredentials: config.corsCredentials,
      allowedHeaders: config.corsHeaders,
      exposedHeaders: config.corsExposedHeaders,
      routes: 'all', // the demo owns its app: every preflight and response (pages, docs, metrics) as well
    },
    rateLimit:
      config.rateLimitDefault === false
        ? false
        : {
            redis,
            redisPrefix: `${config.redisPrefix}rl:`,
            defaultLimit: config.rateLimitDefault,
            limits: config.rateLimits,
          },
    // The demo owns its whole app: the spec's headers on every response (pages, docs, 404s), not only on
    // endpoints (the packages' guest default).
    securityHeaders: { routes: 'all' },
  })
}

/** WebSocket at /ws and, unless TCP_PORT is negative, the TCP frame transport. */
async function registerTransports(app: FastifyInstance, config: DemoConfig, fanout: Fanout): Promise<void> {
  // Which pages may open a WebSocket: this host's own, and the CORS_ORIGINS (PROTOCOL.md "WebSocket").
  const corsOrigin = originMatcher(config.corsOrigins)
  await app.register(triviumWebSocket, {
    path: '/ws',
    bus: fanout.bus,
    allowOrigin: (origin, request) => corsOrigin(origin) || sameHost(origin, request.headers.host),
    // Authenticate at the upgrade when a token is present, so push reaches the user from the start
    // and the connection closes when the token expires or is revoked.
    identify: async (request) => {
      const token = websocketCredential(request.headers, request.query as Record<string, unknown>)
      if (!token) return undefined
      const claims = await app.triviumAuth.authenticate(token)
      return { userId: claims.userId, tokenId: claims.jti, expiresAt: claims.expiresAtMs }
    },
  })
  if (config.tcpPort >= 0) {
    await app.register(triviumTcp, {
      port: config.tcpPort,
      host: config.host,
      mode: config.tcpMode, // shares fastify.push (and so the bus) created by @trivium/websocket
      compression: config.compression,
    })
  }
}

async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(triviumOpenApi, {
    // /docs is Swagger UI (api-docs.ts); the document stays at /openapi.json.
    docsPath: false,
    info: {
      title: 'Trivium Tasks',
      version: VERSION,
      // @trivium/openapi adds the paragraph on WebSocket and TCP; this one says what the service is.
      description: 'The demo service of Trivium: users, roles and their tasks. WebSocket at /ws.',
    },
  })
}

/** Migrates the tasks table, joins the fan-out, ensures the roles, and gathers what handlers need. */
async function prepareHandlerContext(
  app: FastifyInstance,
  config: DemoConfig,
  { sql, fanout }: Backends,
  flows: AuthFlows,
): Promise<HandlerContext> {
  // Task events go through the outbox: written with the change, published by the relay (tasks/outbox.ts).
  const relay = new OutboxRelay(sql, {
    publish: (message, id) =>
      'rightsChanged' in message
        ? fanout.announceRightsChange(message.rightsChanged)
        : fanout.events.publish(fromStored(message, id)),
    log: app.log,
  })
  app.addHook('onClose', () => relay.close())
  const tasks = new TaskRepository(sql, () => relay.kick())
  await tasks.migrate()
  // Sessions live on one instance; revocations and rights changes are announced to all of them.
  fanout.onRevocation((notice) => closeRevokedSessions(app, notice))
  // Revocations announced while this instance's subscription was down were missed (and so were their
  // notices above): after every reload of the list, the open sessions are checked against it; and a
  // lookup that found a token listed in the database meanwhile closes that token's sessions at once
  // (PROTOCOL.md "Revocation window": whenever an instance learns of a revocation).
  const revocation = app.triviumAuth.revocation
  if (revocation instanceof RedisRevocationStore) {
    revocation.onMirrorReload((isListed) =>
      app.push.closeSessions(
        (session) => session.tokenId !== undefined && isListed(session.tokenId),
        TOKEN_REVOKED,
      ),
    )
    revocation.onListedFound((tokenId) => closeRevokedSessions(app, { tokenId }))
  }
  fanout.onRightsChange((userId) => app.rbac.invalidateLive(userId))
  fanout.onResync(() => {
    app.rbac.invalidateLive()
    relay.kick()
  })
  await fanout.ready()
  relay.start()
  const roleIds = await ensureRights(app.rbac)
  return {
    config,
    auth: app.triviumAuth,
    flows,
    rbac: app.rbac,
    tasks,
    events: fanout.events,
    outbox: relay,
    roleIds,
    userExists: async (userId) => (await new SqlUserStore(sql).findById(userId)) !== undefined,
  }
}

/** Ends this instance's WebSocket/TCP sessions and event streams of a revoked token, or of a user. */
function closeRevokedSessions(
  app: FastifyInstance,
  notice: { tokenId?: string | undefined; userId?: number | undefined },
): void {
  if (notice.tokenId) app.push.closeSessions({ tokenId: notice.tokenId }, TOKEN_REVOKED)
  if (notice.userId !== undefined) app.push.closeSessions({ userId: notice.userId }, TOKEN_REVOKED)
}

/** The schema's endpoints with the demo's handlers, and the checks that need them registered. */
function registerDemoEndpoints(
  app: FastifyInstance,
  config: DemoConfig,
  context: HandlerContext,
  { sql }: Backends,
): void {
  const handlers: EndpointHandlers = {
    ...healthHandlers(context),
    ...authHandlers(context),
    ...taskHandlers(context),
    ...adminHandlers(context),
  }
  // Role changes reach the live RBAC caches of every instance (this one's is dropped by the change),
  // through the outbox: a change that committed is answered whatever Redis does.
  for (const name of ['admin.roles.assign', 'admin.roles.revoke'] as const) {
    const change = handlers[name]
    handlers[name] = async (req, call) => {
      const result = await change(req, call)
      await addRightsChange(sql, req.userId)
      context.outbox.kick()
      return result
    }
  }
  app.trivium.use(refuseNulText, { name: 'text-rule' })
  // Idempotency keys of the endpoints with `idempotencyKey` (the creates), per user: after auth.
  app.trivium.use(idempotency({ store: new SqlIdempotencyStore(sql) }), {
    name: 'idempotency',
    after: ['auth'],
  })
  registerEndpoints(app.trivium, handlers)
  // The contract-defined group: the same registry, middleware and transports as the generated API.
  app.trivium.implement(textContract, textHandlers(), {
    'text.slug': { auth: 'public' },
    'text.stats': { auth: 'public' },
  })
  for (const name of Object.keys(config.rateLimits)) {
    if (!app.trivium.registry.has(name))
      throw new ConfigError(`RATE_LIMITS names ${name}, which is not an endpoint of this service`)
  }
}

/** The web page, Swagger UI, /metrics and its page (METRICS on, no METRICS_LISTEN) and /health/ready. */
async function servePages(
  app: FastifyInstance,
  config: DemoConfig,
  { sql, redis, topology }: Backends,
): Promise<void> {
  serveWebPage(app)
  await registerApiDocs(app)
  // Operational detail (metrics, readiness checks) for the scraper's METRICS_TOKEN or a live admin only.
  const isOperator = operatorCheck(app, config.metricsToken)
  if (config.metrics && !config.metricsListen) {
    metricsRoute(app, isOperator)
    metricsPage(app)
  }
  const redisCheck =
    redis && topology
      ? { kind: topology.kind, tls: topology.tls, healthy: () => redisHealthy(redis) }
      : undefined
  readinessRoute(app, sql, redisCheck, (request) =>
    isOperator(request).then(
      () => true,
      () => false,
    ),
  )
}

/** Creates the admin user on first start (ADMIN_USERNAME / ADMIN_PASSWORD, or a generated password). */
async function ensureAdmin(
  flows: AuthFlows,
  sql: SqlClient,
  config: DemoConfig,
  adminRoleId: number,
): Promise<string | undefined> {
  const users = new SqlUserStore(sql)
  if (await users.findByUsername(config.adminUsername)) return undefined
  const given = config.adminPassword
  const password = given ?? `Aa1!${randomBytes(18).toString('base64url')}`
  try {
    // User and admin role in one transaction: a failure leaves no admin without the role.
    await flows.register(
      { username: config.adminUsername, email: config.adminEmail, password },
      { onRegistered: (user, tx) => new RbacService(tx).assignRole(user.id, adminRoleId) },
    )
    return given === undefined ? password : undefined
  } catch (err) {
    // Another instance created it at the same moment: fine.
    if (err instanceof ValidationException && (await users.findByUsername(config.adminUsername)))
      return undefined
    throw err
  }
}

function serveWebPage(app: FastifyInstance): void {
  app.get('/favicon.ico', async (_request, reply) => reply.code(204).send())
  const webDir = join(here, 'web')
  const files: Record<string, { type: string; path: string }> = {
    '/': { type: 'text/html; charset=utf-8', path: join(webDir, 'index.html') },
    '/app.js': { type: 'text/javascript; charset=utf-8', path: join(webDir, 'app.js') },
    '/app.css': { type: 'text/css; charset=utf-8', path: join(webDir, 'app.css') },
  }
  for (const [url, file] of Object.entries(files)) {
    let body: Buffer | undefined
    app.get(url, async (_request, reply) => {
      body ??= readFileSync(file.path)
      return reply.type(file.type).send(body)
    })
  }
}

function sameHost(origin: string, host: string | undefined): boolean {
  try {
    return new URL(origin).host === host
  } catch {
    return false
  }
}
