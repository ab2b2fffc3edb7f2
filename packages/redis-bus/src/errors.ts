// Errors of @trivium/redis-bus, made with @fastify/error (`TRV_REDIS_BUS_*` codes).
import createError from '@fastify/error'

function named<C>(name: string, Base: C): C {
  // A subclass whose `name` says what it is ("RedisBusUnavailableError" rather than "FastifyError").
  const Named = {
    [name]: class extends (Base as unknown as new (...args: unknown[]) => Error) {
      constructor(...args: unknown[]) {
        super(...args)
        this.name = name
      }
    },
  }[name]!
  return Named as unknown as C
}

/**
 * A publish could not be handed to Redis: the connection is down (or still connecting after
 * `publishTimeoutMs`), Redis did not answer within `publishTimeoutMs`, or the bus is closed. Status 503
 * if it reaches a Fastify reply. After a timeout the message may still have been delivered.
 */
export const RedisBusUnavailableError = named(
  'RedisBusUnavailableError',
  createError<'TRV_REDIS_BUS_UNAVAILABLE', [reason: string, options?: { cause?: unknown }]>(
    'TRV_REDIS_BUS_UNAVAILABLE',
    '@trivium/redis-bus: Redis unavailable: %s',
    503,
  ),
)
