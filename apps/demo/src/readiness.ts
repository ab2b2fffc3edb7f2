// Readiness (`GET /health/ready`): the database and Redis answer within a deadline. 200 when both do,
// otherwise 503 in the documented error body. Anyone may ask (probes send no credential) and learns up or
// down; what is checked and what is down (and Redis's topology: single, sentinel or cluster, TLS or not)
// only an operator's credential shows (operator.ts).
// Liveness (`GET /health`) stays the cheap endpoint that touches nothing. Neither is ever rate limited.
import { ServiceUnavailableException, toErrorBody } from '@trivium/core'
import type { SqlClient } from '@trivium/sql'
import type { FastifyInstance, FastifyRequest } from 'fastify'

export const READY_PATH = '/health/ready'
const CHECK_TIMEOUT_MS = 2000

type State = 'up' | 'down' | 'not configured'

async function within(check: () => Promise<unknown>): Promise<State> {
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), CHECK_TIMEOUT_MS)
      }),
    ])
    return 'up'
  } catch {
    return 'down'
  } finally {
    clearTimeout(timer)
  }
}

/** Whether a request may see the checks; without it, nobody does. */
type ShowsChecks = (request: FastifyRequest) => Promise<boolean>

/** The Redis the stores use: its topology (operators see it) and its health check. */
export interface RedisReadiness {
  kind: 'single' | 'sentinel' | 'cluster'
  tls: boolean
  /** Resolves when it serves: a PING (through Sentinel, the current primary), on a cluster its state ok. */
  healthy(): Promise<unknown>
}

export function readinessRoute(
  app: FastifyInstance,
  sql: SqlClient,
  redis: RedisReadiness | undefined,
  showsChecks: ShowsChecks = async () => false,
): void {
  const names = { postgres: 'PostgreSQL', pglite: 'the embedded database' } as const
  app.get(READY_PATH, { logLevel: 'warn' }, async (request, reply) => {
    const [database, redisState] = await Promise.all([
      within(() => sql.query('SELECT 1')),
      redis ? within(() => redis.healthy()) : Promise.resolve<State>('not configured'),
    ])
    const ready = database === 'up' && redisState !== 'down'
    // A credential is looked at only when one was sent: a probe costs no token check.
    if (request.headers.authorization === undefined || !(await showsChecks(request))) {
      if (ready) return { status: 'ready' }
      return reply.code(503).send(toErrorBody(new ServiceUnavailableException('Not ready'), request.id))
    }
    const checks = {
      database,
      databaseKind: sql.dialect,
      redis: redisState,
      ...(redis ? { redisTopology: redis.kind, redisTls: redis.tls } : {}),
    }
    if (ready) return { status: 'ready', checks }
    const down = [
      database === 'down' ? names[sql.dialect] : undefined,
      redisState === 'down' ? 'Redis' : undefined,
    ]
      .filter(Boolean)
      .join(' and ')
    const error = new ServiceUnavailableException(
      `Not ready: ${down} ${down.includes(' and ') ? 'are' : 'is'} down`,
    )
    // details in the documented FieldError form: one entry per dependency that is down.
    const details = [
      ...(database === 'down' ? [{ field: 'database', message: `${names[sql.dialect]} is down` }] : []),
      ...(redisState === 'down' ? [{ field: 'redis', message: 'Redis is down' }] : []),
    ]
    return reply.code(503).send({ ...toErrorBody(error, request.id), details })
  })
}
