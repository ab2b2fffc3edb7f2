// Who may read what the operational endpoints reveal beyond "up" / "down": GET /metrics (traffic per
// endpoint, error codes, auth failures, open connections) and the checks of GET /health/ready (which
// database, whether Redis is configured). An operator is the scraper holding METRICS_TOKEN, or a signed-in
// user whose current rights (read live, as for admin.*, never the token's snapshot) hold the role `admin`.
// Everyone else gets liveness (GET /health) and readiness's up/down (demo README "Operations").
import {
  ForbiddenException,
  isTriviumError,
  normalizeError,
  toErrorBody,
  UnauthorizedException,
} from '@trivium/core'
import { bearerMatches, METRICS_TOKEN_MESSAGE } from '@trivium/metrics'
import type { FastifyInstance, FastifyRequest } from 'fastify'

export const OPERATOR_ROLE = 'admin'

/** Resolves when the request carries an operator's credential; rejects with the 401 / 403 otherwise. */
export type OperatorCheck = (request: FastifyRequest) => Promise<void>

export function operatorCheck(app: FastifyInstance, metricsToken: string | undefined): OperatorCheck {
  const scraper = metricsToken === undefined ? undefined : Buffer.from(metricsToken)
  return async (request) => {
    const header = request.headers.authorization
    if (scraper && bearerMatches(header, scraper)) return
    const token = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7) : ''
    if (token === '') throw new UnauthorizedException(METRICS_TOKEN_MESSAGE)
    const { userId } = await app.triviumAuth.authenticate(token).catch((err: unknown) => {
      // An expired, forged or revoked token (any 401) is no credential; an unreachable revocation list
      // stays a 503.
      throw isTriviumError(err) && err.statusCode === 401
        ? new UnauthorizedException(METRICS_TOKEN_MESSAGE)
        : err
    })
    if (!(await app.rbac.liveRights(userId)).roles.includes(OPERATOR_ROLE))
      throw new ForbiddenException(`Insufficient roles. Required: ${OPERATOR_ROLE}`)
  }
}

/** `GET /metrics` for operators only: 401 (with `WWW-Authenticate: Bearer`) or 403 in the error body. */
export function metricsRoute(app: FastifyInstance, isOperator: OperatorCheck): void {
  const { registry } = app.metrics
  app.get('/metrics', { logLevel: 'warn' }, async (request, reply) => {
    try {
      await isOperator(request)
    } catch (err) {
      const { error, internal } = normalizeError(err)
      if (internal) request.log.error({ err }, 'operator check failed')
      const body = toErrorBody(error, request.id)
      if (body.statusCode === 401) reply.header('www-authenticate', 'Bearer')
      return reply.code(body.statusCode).send(body)
    }
    return reply.type(registry.contentType).send(await registry.metrics())
  })
}
