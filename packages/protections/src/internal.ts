// `@trivium/protections/internal`: building blocks for tests and integrations; not a stable API.
export { type EndpointKeys, KEY_CACHE_LIMIT, KeyCache } from './rate-limit/plugin.js'
export { FIXED_WINDOW_LUA } from './rate-limit/redis-store.js'
export { retryAfterSeconds } from './rate-limit/window.js'
