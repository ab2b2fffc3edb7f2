import { rmSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { makeCertificates, rangePort, SentinelSet, startFailing } from './redis-topology-helpers.js'
import {
  api,
  dropBackend,
  type Instance,
  newBackend,
  PrivatePostgres,
  PrivateRedis,
  postgresBinDir,
  registerAndLogin,
  startProcess,
} from './scale-helpers.js'

const PREFIX = 'Trivium Tasks failed to start: '
const PG_SECRET = 'pg-tls-Secret-3b8a'
const METRICS_TOKEN = 'tls-test-metrics-token-0123456789'
t.setTimeout(10 * 60_000)

const bin = postgresBinDir()

t.test('TLS to Redis and PostgreSQL', { skip: bin ? false : 'no PostgreSQL server binaries' }, async (t) => {
  const certs = makeCertificates()
  t.teardown(() => rmSync(certs.dir, { recursive: true, force: true }))
  const redisPort = await rangePort()
  // TLS only (no plain port), client certificates required (tls-auth-clients yes, the default).
  const redis = new PrivateRedis(redisPort, [
    ...['--port', '0', '--tls-port', String(redisPort)],
    ...['--tls-cert-file', certs.serverCert, '--tls-key-file', certs.serverKey],
    ...['--tls-ca-cert-file', certs.ca],
  ])
  await redis.start()
  t.teardown(() => redis.close())
  const pg = await PrivatePostgres.create(PG_SECRET, {
    port: await rangePort(),
    files: { 'server.crt': certs.serverCert, 'server.key': certs.serverKey },
    settings: ['ssl=on', 'ssl_cert_file={dir}/server.crt', 'ssl_key_file={dir}/server.key'],
  })
  t.teardown(() => pg.close())

  const databaseUrl = `${pg.url(PG_SECRET)}?sslmode=verify-full`
  const good = {
    DATABASE_URL: databaseUrl,
    DATABASE_CA_FILE: certs.ca,
    REDIS_URL: `rediss://127.0.0.1:${redisPort}`,
    REDIS_TLS_CA: certs.ca,
    REDIS_TLS_CERT: certs.clientCert,
    REDIS_TLS_KEY: certs.clientKey,
  }

  await t.test('the demo starts and serves over TLS to both', async (t) => {
    let instance: Instance | undefined
    t.teardown(() => instance?.stop())
    instance = await startProcess('tls', { ...good, METRICS_TOKEN, REDIS_PREFIX: 'tls:' })
    const ready = await api(instance.base, 'GET', '/health/ready', { token: METRICS_TOKEN })
    t.same(ready.body, {
      status: 'ready',
      checks: {
        database: 'up',
        databaseKind: 'postgres',
        redis: 'up',
        redisTopology: 'single',
        redisTls: true,
      },
    })
    const { tokens } = await registerAndLogin(instance.base, 'tina')
    const me = await api(instance.base, 'GET', '/auth/me', { token: tokens.accessToken })
    t.equal(me.status, 200, 'an authenticated call (revocation list on Redis, user in PostgreSQL)')
    // Every connection of the demo to PostgreSQL is encrypted (asked over TLS ourselves).
    const { default: pgLib } = await import('pg')
    const client = new pgLib.Client({
      connectionString: `${databaseUrl}&sslrootcert=${encodeURIComponent(certs.ca)}`,
    })
    await client.connect()
    t.teardown(() => client.end())
    const { rows } = await client.query(
      `SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
        WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()`,
    )
    t.ok(rows.length > 0, `the demo holds ${rows.length} connections to PostgreSQL`)
    t.ok(
      rows.every((r) => r.ssl === true),
      'all of them TLS',
    )
  })

  const refusals: Array<[string, Record<string, string>, RegExp]> = [
    [
      'REDIS_TLS_CA: the wrong CA',
      { ...good, REDIS_TLS_CA: certs.otherCa },
      /^REDIS_TLS_CA: the certificate of 127\.0\.0\.1:\d+ did not verify against it \([^)\n]+\) — REDIS_TLS_CA must be the CA that signed the server's certificate$/,
    ],
    [
      'rediss:// without REDIS_TLS_CA: the system CAs do not know the test CA',
      { ...good, REDIS_TLS_CA: '' },
      /^REDIS_URL: the certificate of 127\.0\.0\.1:\d+ did not verify against the system's CAs \([^)\n]+\) — set REDIS_TLS_CA to the CA that signed it$/,
    ],
    [
      'DATABASE_CA_FILE: the wrong CA',
      { ...good, DATABASE_CA_FILE: certs.otherCa },
      /^DATABASE_CA_FILE: the certificate of 127\.0\.0\.1:\d+ did not verify against it \([^)\n]+\) — DATABASE_CA_FILE must be the CA that signed the server's certificate$/,
    ],
    [
      'sslmode=verify-full without DATABASE_CA_FILE',
      { ...good, DATABASE_CA_FILE: '' },
      /^DATABASE_URL: the certificate of 127\.0\.0\.1:\d+ did not verify against the system's CAs \([^)\n]+\) — set DATABASE_CA_FILE to the CA that signed it$/,
    ],
    [
      'no client certificate for a Redis that asks for one',
      { ...good, REDIS_TLS_CERT: '', REDIS_TLS_KEY: '' },
      /^REDIS_TLS_CERT: 127\.0\.0\.1:\d+ asks for a client certificate \(TLS alert "certificate required"\) — set REDIS_TLS_CERT and REDIS_TLS_KEY$/,
    ],
    [
      'REDIS_TLS_CA that is not a file',
      { ...good, REDIS_TLS_CA: join(certs.dir, 'missing.crt') },
      /^REDIS_TLS_CA: cannot read \S+missing\.crt \(ENOENT\) — give the path of a PEM file$/,
    ],
    [
      'REDIS_TLS_CA with redis://',
      { ...good, REDIS_URL: `redis://127.0.0.1:${redisPort}` },
      /^REDIS_TLS_CA is set but the Redis connections are not TLS — use rediss:\/\/ in REDIS_URL$/,
    ],
    [
      'REDIS_URL and REDIS_CLUSTER_NODES',
      { ...good, REDIS_CLUSTER_NODES: `127.0.0.1:${redisPort}` },
      /^REDIS_URL and REDIS_CLUSTER_NODES are both set — keep one: REDIS_URL \(one Redis\), REDIS_SENTINELS \(a Sentinel set\) or REDIS_CLUSTER_NODES \(a cluster\)$/,
    ],
    [
      'DATABASE_CA_FILE without sslmode',
      { ...good, DATABASE_URL: pg.url(PG_SECRET) },
      /^DATABASE_CA_FILE needs sslmode=verify-full in DATABASE_URL \(no sslmode given\)$/,
    ],
  ]
  for (const [name, env, line] of refusals) {
    await t.test(name, async (t) => {
      const run = await startFailing(env)
      t.equal(run.code, 1, 'refuses to start')
      t.ok(run.output.startsWith(PREFIX) && run.output.endsWith('\n'), 'one line')
      t.equal(run.output.split('\n').length, 2, 'one line only')
      t.match(run.output.slice(PREFIX.length, -1), line, 'naming the setting and the fix')
      t.notMatch(run.output, PG_SECRET, 'the password is not printed')
    })
  }
})

t.test('TLS to a Sentinel set (REDIS_TLS=true): sentinels and data nodes', async (t) => {
  const certs = makeCertificates()
  t.teardown(() => rmSync(certs.dir, { recursive: true, force: true }))
  const set = await SentinelSet.create({ tls: certs, password: 'data-Secret-5e1f' })
  t.teardown(() => set.close())
  const backend = newBackend()
  t.teardown(() => dropBackend(backend, 'redis://127.0.0.1:1')) // the keys go with the processes
  const env = {
    DATABASE_URL: backend.databaseUrl,
    DATABASE_SCHEMA: backend.schema,
    REDIS_SENTINELS: set.setting,
    REDIS_PASSWORD: 'data-Secret-5e1f',
    REDIS_TLS: 'true',
    REDIS_TLS_CA: certs.ca,
    REDIS_PREFIX: backend.prefix,
  }
  let instance: Instance | undefined
  t.teardown(() => instance?.stop())
  instance = await startProcess('tls-sentinel', { ...env, METRICS_TOKEN })
  const ready = await api(instance.base, 'GET', '/health/ready', { token: METRICS_TOKEN })
  t.match(ready.body, { status: 'ready', checks: { redis: 'up', redisTopology: 'sentinel', redisTls: true } })
  const { tokens } = await registerAndLogin(instance.base, 'sam')
  t.equal((await api(instance.base, 'GET', '/auth/me', { token: tokens.accessToken })).status, 200)

  const wrong = await startFailing({ ...env, REDIS_TLS_CA: certs.otherCa })
  t.equal(wrong.code, 1)
  t.match(
    wrong.output,
    /^Trivium Tasks failed to start: REDIS_TLS_CA: the certificate of 127\.0\.0\.1:\d+ did not verify against it \([^)\n]+\) — REDIS_TLS_CA must be the CA that signed the server's certificate\n$/,
    'the wrong CA for the sentinels: one line naming REDIS_TLS_CA',
  )
  const plain = await startFailing({ ...env, REDIS_TLS: 'false', REDIS_TLS_CA: '' })
  t.equal(plain.code, 1)
  t.match(
    plain.output,
    /^Trivium Tasks failed to start: REDIS_SENTINELS: [^\n]+ — is that Redis Sentinel's port\?\n$/,
    'plain TCP to TLS sentinels: one line naming REDIS_SENTINELS',
  )
})
