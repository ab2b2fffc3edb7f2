// The Redis commands of the revocation store (README "Revocation list"): the add/remove scripts that store
// a change and announce it in one round trip (PUBLISH, or SPUBLISH on a Cluster), the key's hash tag, the
// list's load (SCAN + PTTL on every primary) and the server that holds a key.
import { createHash } from 'node:crypto'
import type { RevocationRedisClient, RevocationRedisNode } from './redis-revocation.js'
import type { RunCommand } from './revocation-reconciliation.js'

// KEYS[1] entry key; ARGV[1] ttl in seconds ('' = none); ARGV[2] channel; ARGV[3] announcement.
export const ADD_AND_ANNOUNCE_LUA = `
if ARGV[1] == '' then
  redis.call('SET', KEYS[1], '1')
else
  redis.call('SET', KEYS[1], '1', 'EX', ARGV[1])
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
`
// KEYS[1] entry key; ARGV[1] channel; ARGV[2] announcement.
export const REMOVE_AND_ANNOUNCE_LUA = `
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
`
// On a Cluster: the same with sharded pub/sub (the key and the channel share a slot, see `keyPrefix`).
const SHARDED_ADD_LUA = ADD_AND_ANNOUNCE_LUA.replace("'PUBLISH'", "'SPUBLISH'")
const SHARDED_REMOVE_LUA = REMOVE_AND_ANNOUNCE_LUA.replace("'PUBLISH'", "'SPUBLISH'")
const sha1 = (text: string) => createHash('sha1').update(text).digest('hex')
export const SCRIPTS = {
  plain: {
    add: { sha: sha1(ADD_AND_ANNOUNCE_LUA), source: ADD_AND_ANNOUNCE_LUA },
    remove: { sha: sha1(REMOVE_AND_ANNOUNCE_LUA), source: REMOVE_AND_ANNOUNCE_LUA },
  },
  sharded: {
    add: { sha: sha1(SHARDED_ADD_LUA), source: SHARDED_ADD_LUA },
    remove: { sha: sha1(SHARDED_REMOVE_LUA), source: SHARDED_REMOVE_LUA },
  },
}

/** The hash tag that puts a key in `channel`'s slot: its own tag if it has one, else the whole name. */
export function hashTagOf(channel: string): string {
  const open = channel.indexOf('{')
  const close = open === -1 ? -1 : channel.indexOf('}', open + 1)
  return close > open + 1 ? channel.slice(open, close + 1) : `{${channel}}`
}

export function isCluster(client: RevocationRedisClient): boolean {
  return typeof client.nodes === 'function'
}
/** Client statuses in which no command gets through. */
export const DOWN = new Set(['end', 'close', 'reconnecting'])

export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&')
}

/** The list as Redis holds it (SCAN + PTTL): jti → expiry (ms on this clock) or null. */
export async function scanList(
  redisClient: RevocationRedisClient,
  prefix: string,
  run: RunCommand,
): Promise<Map<string, number | null>> {
  const client = redisClient as Required<RevocationRedisClient>
  const pattern = `${escapeGlob(prefix)}*`
  const loaded = new Map<string, number | null>()
  // SCAN covers one server: on a Cluster every primary is scanned (the list is in one slot, but a
  // slot being migrated has keys on two nodes).
  const servers: Pick<RevocationRedisNode, 'scan'>[] = isCluster(client) ? client.nodes('master') : [client]
  for (const server of servers) {
    let cursor = '0'
    do {
      const [next, keys] = await run(() => server.scan(cursor, 'MATCH', pattern, 'COUNT', 1000))
      cursor = next
      const ttls = await run(() => Promise.all(keys.map((key) => client.pttl(key))))
      const now = Date.now()
      keys.forEach((key, i) => {
        const ttl = ttls[i]!
        if (ttl === -2 || key.length === prefix.length) return // expired or deleted since SCAN; the marker
        loaded.set(key.slice(prefix.length), ttl === -1 ? null : now + ttl)
      })
    } while (cursor !== '0')
  }
  return loaded
}

/** The server that holds `key`: the client itself, or on a Cluster the primary owning its slot. */
export async function nodeOf(
  redisClient: RevocationRedisClient,
  key: string,
): Promise<Pick<RevocationRedisNode, 'info'>> {
  const client = redisClient as Required<RevocationRedisClient>
  if (!isCluster(client)) return client
  const slot = Number(await client.cluster('KEYSLOT', key))
  const owner = client.slots[slot]?.[0]
  const node = client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner)
  if (node === undefined) throw new Error(`no known primary for slot ${slot}`)
  return node
}
