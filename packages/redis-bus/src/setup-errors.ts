// @trivium/redis-bus's refusals at setup, one row per code (README "Setup errors"): each a TypeError with `code`.
import { setupErrors } from '@trivium/wire'

export const SETUP = setupErrors('@trivium/redis-bus', {
  TRV_REDIS_BUS_PUBSUB_OPTIONS: {
    when: "`RedisPubSub`'s options are not an object",
    message: () => 'options must be an object with `redis`',
  },
  TRV_REDIS_BUS_REDIS: {
    when: '`redis` is not a Redis URL, an ioredis `Redis` or an ioredis `Cluster`',
    message: () => 'redis must be a Redis URL, an ioredis Redis or an ioredis Cluster',
  },
  TRV_REDIS_BUS_PUBLISH_TIMEOUT: {
    when: '`publishTimeoutMs` is not a positive integer',
    message: () => 'publishTimeoutMs must be a positive integer (milliseconds)',
  },
  TRV_REDIS_BUS_RETRY_MAX_DELAY: {
    when: '`retryMaxDelayMs` is not a positive integer',
    message: () => 'retryMaxDelayMs must be a positive integer (milliseconds)',
  },
  TRV_REDIS_BUS_LOGGER: {
    when: '`logger` lacks `info`, `warn` or `error`',
    message: () => 'logger must have info, warn and error methods',
  },
  TRV_REDIS_BUS_OPTIONS: {
    when: "a bus's or channel's options are not an object",
    message: () => 'options must be an object with `redis` or `pubsub`',
  },
  TRV_REDIS_BUS_PUBSUB: {
    when: '`pubsub` is not a `RedisPubSub`',
    message: () => 'pubsub must be a RedisPubSub',
  },
  TRV_REDIS_BUS_NAME: {
    when: 'a channel name, `prefix` or `channel` is not a non-empty string',
    message: (option: string) => `${option} must be a non-empty string`,
  },
  TRV_REDIS_BUS_VALIDATE: {
    when: "a channel's `validate` is not a function",
    message: () => 'validate must be a function',
  },
  TRV_REDIS_BUS_HANDLER: {
    when: '`subscribe()` is given a handler that is not a function',
    message: () => 'handler must be a function',
  },
})
