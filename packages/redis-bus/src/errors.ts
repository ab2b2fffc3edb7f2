// Errors of @trivium/redis-bus (`TRV_REDIS_BUS_*` codes), made with @trivium/wire's `codedError`.
import { codedError } from '@trivium/wire/errors'

/**
 * A publish could not be handed to Redis: the connection is down (or still connecting after
 * `publishTimeoutMs`), Redis did not answer within `publishTimeoutMs`, or the bus is closed. Status 503
 * if it reaches a Fastify reply. After a timeout the message may still have been delivered.
 */
export const RedisBusUnavailableError = codedError(
  'RedisBusUnavailableError',
  'TRV_REDIS_BUS_UNAVAILABLE',
  503,
  (reason: string, _options?: { cause?: unknown }) => `@trivium/redis-bus: Redis unavailable: ${reason}`,
)
export type RedisBusUnavailableError = InstanceType<typeof RedisBusUnavailableError>
