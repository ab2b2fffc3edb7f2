// Reconciliation of the Redis copy with a durable revocation store (the source of truth, with `durable`):
// the Redis keys are a copy of the durable list, marked by the key `<prefix>` holding the run id of the
// server they were written to. A marker that is gone (restart without persistence, FLUSHALL, eviction,
// expiry) or names another server (failover to a replica) means the copy is lost or stale: every entry is
// written again, then the marker.

import type { RevocationRedisClient } from './redis-revocation.js'
import { nodeOf } from './redis-revocation-commands.js'
import type { DurableRevocationStore } from './revocation.js'

/** The marker's TTL: refreshed on every check of the copy (so it also goes when every instance is gone). */
const MARKER_TTL_MS = 60_000

/** Runs one Redis command within the store's timeout (`RedisRevocationStore.run`). */
export type RunCommand = <T>(command: () => Promise<T>) => Promise<T>

/** Checks the copy's marker; rewrites every entry and then the marker when the copy is lost. Throws when unreachable. */
export async function reconcileRedisCopy(
  client: RevocationRedisClient,
  prefix: string,
  durable: DurableRevocationStore,
  run: RunCommand,
): Promise<void> {
  const redis = client as Required<RevocationRedisClient>
  // The run id of the server holding the marker (on a Cluster: the primary owning its slot).
  const server = await run(() => nodeOf(redis, prefix))
  const [info, marker] = await run(() => Promise.all([server.info('server'), redis.get(prefix)]))
  const runId = /run_id:(\w+)/.exec(info)?.[1] ?? '?'
  if (marker === runId && (await run(() => redis.pexpire(prefix, MARKER_TTL_MS))) === 1) return
  const entries = await durable.entries()
  for (let i = 0; i < entries.length; i += 500) {
    const now = Date.now()
    await run(() =>
      Promise.all(
        entries.slice(i, i + 500).map(([jti, expiresAt]) => {
          if (expiresAt === null) return redis.set(prefix + jti, '1')
          return expiresAt > now ? redis.set(prefix + jti, '1', 'PX', expiresAt - now) : undefined
        }),
      ),
    )
  }
  // Written last, with the run id read before the entries: a restart meanwhile is found next time.
  await run(() => redis.set(prefix, runId, 'PX', MARKER_TTL_MS))
}
