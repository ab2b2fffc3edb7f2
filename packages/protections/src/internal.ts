// `@trivium/protections/internal`: building blocks for tests and integrations; not a stable API.
export { type EndpointKeys, KEY_CACHE_LIMIT, KeyCache } from './rate-limit.js'
export { FIXED_WINDOW_LUA } from './redis-store.js'
export { retryAfterSeconds } from './window.js'
