// Loaded with `node --import ./scripts/matrix/ioredis-version.mjs`: when TRIVIUM_IOREDIS=oldest, every import of
// `ioredis`, from any package, resolves to the root devDependency `ioredis-oldest` (the floor of @trivium/redis-bus's
// ioredis peer range), so the version matrix runs the redis-bus tests against both ends of the range.
import { register } from 'node:module'

if (process.env.TRIVIUM_IOREDIS === 'oldest') register('./ioredis-version-hooks.mjs', import.meta.url)
