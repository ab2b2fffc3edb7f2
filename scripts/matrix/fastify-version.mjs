// Loaded with `node --import ./scripts/matrix/fastify-version.mjs`: when TRIVIUM_FASTIFY=oldest, every import of
// `fastify` (and `fastify/...`), from any package, resolves to the root devDependency `fastify-oldest` (the oldest
// Fastify the packages' peer range allows), so the version matrix runs the same tests against both ends of it.
import { register } from 'node:module'

if (process.env.TRIVIUM_FASTIFY === 'oldest') register('./fastify-version-hooks.mjs', import.meta.url)
