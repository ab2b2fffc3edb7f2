// The rate-limit middleware's store keys: `<clientId>:<endpoint>`, built once per (client, endpoint) and
// reused (KeyCache), with a bounded cache.
import type { TriviumCall, TriviumIdentity } from '@trivium/core'
import { clientId } from '@trivium/protections'
import { KEY_CACHE_LIMIT, KeyCache } from '@trivium/protections/internal'
import t from 'tap'

function call(endpoint: string, identity: TriviumIdentity | undefined, clientIp?: string) {
  return { endpoint, identity, clientIp } as unknown as TriviumCall<unknown>
}

t.test('keys are <clientId>:<endpoint>, the same as before the cache', async (t) => {
  const keys = new KeyCache()
  const user7 = { userId: 7, roles: [], permissions: [] }
  t.equal(keys.keyOf(call('tasks.create', user7)), 'user:7:tasks.create')
  t.equal(keys.keyOf(call('tasks.create', user7)), 'user:7:tasks.create', 'a cached key')
  t.equal(keys.keyOf(call('tasks.list', user7)), 'user:7:tasks.list', 'per endpoint')
  t.equal(
    keys.keyOf(call('tasks.create', { userId: '7', roles: [], permissions: [] })),
    'user:7:tasks.create',
  )
  t.equal(keys.keyOf(call('tasks.create', { userId: 8, roles: [], permissions: [] })), 'user:8:tasks.create')
  t.equal(keys.keyOf(call('tasks.create', undefined, '10.0.0.1')), 'ip:10.0.0.1:tasks.create')
  t.equal(keys.keyOf(call('tasks.create', undefined, '10.0.0.2')), 'ip:10.0.0.2:tasks.create')
  t.equal(keys.keyOf(call('tasks.create', undefined, undefined)), 'ip:unknown:tasks.create')
  t.equal(keys.keyOf(call('tasks.create', undefined, '')), 'ip:unknown:tasks.create')
  // A user id that looks like an IP stays a user key, an IP equal to a user id stays an IP key.
  t.equal(
    keys.keyOf(call('tasks.create', { userId: '10.0.0.1', roles: [], permissions: [] })),
    'user:10.0.0.1:tasks.create',
  )
  t.equal(keys.keyOf(call('tasks.create', undefined, '7')), 'ip:7:tasks.create')
  for (const c of [call('x', user7), call('x', undefined, '10.0.0.1'), call('x', undefined)]) {
    t.equal(keys.keyOf(c), `${clientId(c)}:x`)
  }
})

t.test('the cache is bounded: a full cache is emptied before it grows', async (t) => {
  t.equal(KEY_CACHE_LIMIT, 10_000)
  const keys = new KeyCache()
  for (let id = 1; id <= KEY_CACHE_LIMIT; id++)
    keys.keyOf(call('ping', { userId: id, roles: [], permissions: [] }))
  t.equal(keys.size, KEY_CACHE_LIMIT)
  t.equal(keys.keyOf(call('ping', { userId: 1, roles: [], permissions: [] })), 'user:1:ping', 'still cached')
  t.equal(keys.size, KEY_CACHE_LIMIT)
  t.equal(
    keys.keyOf(call('ping', { userId: KEY_CACHE_LIMIT + 1, roles: [], permissions: [] })),
    'user:10001:ping',
  )
  t.equal(keys.size, 1, 'emptied, then the new key')
  keys.keyOf(call('ping', undefined, '10.0.0.1'))
  keys.keyOf(call('other', undefined, '10.0.0.1'))
  t.equal(keys.size, 3, 'users and IPs of each endpoint counted')
})
