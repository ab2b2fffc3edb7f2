// ioredis, imported statically. Loading it lazily (createRequire at the first pub/sub pair) saved ~460 M
// instructions of cold import, but a `require` bypasses ESM loader hooks: an app (or the ioredis version
// matrix, scripts/matrix/ioredis-version.mjs) whose `import 'ioredis'` resolves to another copy then built
// clients this package's `instanceof` checks refused. Correct first; the import cost is in bench/README.md.
import { Cluster, Redis } from 'ioredis'

const library = { Cluster, Redis }

/** ioredis's client classes, the same ones an `import` from this package gives. */
export function ioredis(): typeof library {
  return library
}
