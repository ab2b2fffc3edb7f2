// ioredis (~45 CommonJS files, about as much start-up work as Fastify's own import) is loaded when the
// first pub/sub pair is built, not when @trivium/redis-bus is imported: an app that imports the package
// but runs without Redis never pays for it (bench/README.md, "Cold import").
import { createRequire } from 'node:module'

let library: typeof import('ioredis') | undefined

/** ioredis, the same instance a static `import` would give (resolved from this package). */
export function ioredis(): typeof import('ioredis') {
  library ??= createRequire(import.meta.url)('ioredis') as typeof import('ioredis')
  return library
}
