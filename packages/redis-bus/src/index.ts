// @trivium/redis-bus: Redis pub/sub between Trivium instances (ioredis). `RedisBus` carries server push
// for SessionHub; `RedisChannel<T>` carries any JSON signal; both can share one `RedisPubSub` pair.
export { RedisBus, type RedisBusOptions } from './bus.js'
export { createRedisChannel, type MessageMeta, RedisChannel, type RedisChannelOptions } from './channel.js'
export { RedisBusUnavailableError } from './errors.js'
export { instanceId } from './instance-id.js'
export { type LoggerLike, RedisPubSub, type RedisPubSubOptions } from './pubsub.js'
export type { ConnectionOptions } from './shared.js'
