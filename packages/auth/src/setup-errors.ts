// @trivium/auth's refusals at setup, one row per code (README "Setup errors"): each a TypeError with `code`.
// A wrong argument to a call at run time (`sign`, `revoke`, `register`) is not a setup error: no row.
import { setupErrors } from '@trivium/core/internal'

export const SETUP = setupErrors('@trivium/auth', {
  TRV_AUTH_OPTIONS: {
    when: 'the options of the plugin or of `new TokenService` are not an object',
    message: () => 'options are required',
  },
  TRV_AUTH_SECRET_REQUIRED: {
    when: '`secret` is not a string or Buffer',
    message: () => 'secret is required (a string or Buffer)',
  },
  TRV_AUTH_SECRET_EMPTY: {
    when: '`secret` is empty',
    message: () => 'secret must not be empty',
  },
  TRV_AUTH_SECRET_PRODUCTION: {
    when: '`new TokenService` in production is given a `secret` shorter than 32 bytes',
    message: (minBytes: number) => `secret must be at least ${minBytes} bytes in production`,
  },
  TRV_AUTH_WEAK_SECRET: {
    when: 'the plugin is given a `secret` shorter than 32 bytes without `allowWeakSecretForTesting: true` (always in production)',
    message: (minBytes: number) =>
      `the signing secret must be at least ${minBytes} bytes (use 32 random bytes; allowWeakSecretForTesting: true accepts a short one in tests)`,
  },
  TRV_AUTH_WEAK_SECRET_OPT_IN: {
    when: '`allowWeakSecretForTesting` is not a boolean',
    message: () => 'allowWeakSecretForTesting must be a boolean',
  },
  TRV_AUTH_ISSUER: {
    when: '`issuer` is not a non-empty string',
    message: () => 'issuer must be a non-empty string',
  },
  TRV_AUTH_TTL: {
    when: '`accessTokenTtlSeconds` (or the `ttlSeconds` given to `sign`) is not a positive integer',
    message: (name: string) => `${name} must be a positive integer (seconds)`,
  },
  TRV_AUTH_CLOCK: {
    when: '`clock` is not a function',
    message: () => 'clock must be a function',
  },
  TRV_AUTH_VERIFIED_CACHE_SIZE: {
    when: '`verifiedCacheSize` is not a non-negative integer',
    message: () => 'verifiedCacheSize must be a non-negative integer',
  },
  TRV_AUTH_ROLES_PROVIDER: {
    when: '`rolesProvider` is not a function',
    message: () => 'rolesProvider must be a function',
  },
  TRV_AUTH_ON_REVOKED: {
    when: '`onRevoked` (option or `auth.onRevoked(listener)`) is given something that is not a function',
    message: () => 'onRevoked needs a function',
  },
  TRV_AUTH_ENDPOINT_NAMES: {
    when: '`publicEndpoints` or `optionalEndpoints` is not a list of endpoint names',
    message: (name: string) => `${name} must be a list of endpoint names`,
  },
  TRV_AUTH_ENDPOINT_NAME: {
    when: '`createAuthMiddleware` is given an endpoint name that is not a string',
    message: () => 'endpoint names must be strings',
  },
  TRV_AUTH_ENDPOINT_MODE: {
    when: "an endpoint's `auth` is not public, optional or required (checked at `ready()`)",
    message: (name: string, modes: string) => `endpoint "${name}": auth must be one of ${modes}`,
  },
  TRV_AUTH_REVOCATION_STORE: {
    when: '`revocationStore` lacks `add`, `contains`, `remove` or `cleanup`',
    message: () => 'revocationStore must implement add, contains, remove and cleanup',
  },
  TRV_AUTH_CLEANUP_INTERVAL: {
    when: '`cleanupIntervalMs` is not a non-negative integer',
    message: () => 'cleanupIntervalMs must be a non-negative integer',
  },
  TRV_AUTH_REQUEST_USER: {
    when: '`requestUser` is not a boolean',
    message: () => 'requestUser must be a boolean',
  },
  TRV_AUTH_ROUTE_RULES: {
    when: "a plain route's `config.triviumRoute` is not an object",
    message: (method: string, url: string) => `route ${method} ${url}: config.triviumRoute must be an object`,
  },
  TRV_AUTH_ROUTE_NAME: {
    when: "a plain route's `config.triviumRoute.name` is not a non-empty string",
    message: (method: string, url: string) =>
      `route ${method} ${url}: config.triviumRoute.name must be a string`,
  },
  TRV_AUTH_ROUTE_MODE: {
    when: "a plain route's `config.triviumRoute.auth` is not public, optional or required",
    message: (method: string, url: string, modes: string, got: string) =>
      `route ${method} ${url}: config.triviumRoute.auth must be one of ${modes}, got ${got}`,
  },
  TRV_AUTH_FLOWS: {
    when: '`flows` is not an object',
    message: () => 'flows must be an object',
  },
  TRV_AUTH_FLOWS_SQL: {
    when: '`flows.sql` is given (replaced by `users` and `ledger`)',
    message: () =>
      "flows.sql is gone: pass users: new SqlUserStore(sql) and ledger: new SqlTokenLedger(sql) from '@trivium/auth/sql'",
  },
  TRV_AUTH_FLOWS_OPTIONS: {
    when: 'the flows are created without options',
    message: () => 'flows options are required',
  },
  TRV_AUTH_FLOWS_USERS: {
    when: '`flows.users` is not a user store (no `findByUsername`)',
    message: () => 'flows need a user store (flows.users, e.g. SqlUserStore from @trivium/auth/sql)',
  },
  TRV_AUTH_FLOWS_ENCRYPTION_KEY: {
    when: '`flows.encryptionKey` is missing',
    message: () => 'flows.encryptionKey is required (standard base64 of 32 bytes)',
  },
  TRV_AUTH_FLOWS_LEDGER: {
    when: 'the flows are used without a token ledger',
    message: () => 'flows need a token ledger (refresh rotation)',
  },
  TRV_AUTH_FLOWS_ON_REGISTERED: {
    when: '`flows.onRegistered` is not a function',
    message: () => 'flows.onRegistered must be a function',
  },
  TRV_AUTH_FLOWS_TRANSACTION: {
    when: '`flows.onRegistered` is given with a user store that has no `transaction()`',
    message: () => 'flows.onRegistered needs a user store with transaction() (e.g. SqlUserStore)',
  },
  TRV_AUTH_FLOWS_ON_THEFT: {
    when: '`flows.onTheft` is not a function',
    message: () => 'flows.onTheft must be a function',
  },
  TRV_AUTH_FLOWS_BASE_PATH: {
    when: '`flows.basePath` does not start with "/" or ends with "/"',
    message: () => 'flows.basePath must start with "/" and not end with "/"',
  },
  TRV_AUTH_SQL_CLIENT: {
    when: '`SqlUserStore`, `SqlRevocationStore` or `SqlTokenLedger` is not given a @trivium/sql client',
    message: (store: string) => `${store} needs a @trivium/sql client`,
  },
  TRV_AUTH_REDIS_CLIENT: {
    when: '`RedisRevocationStore` is not given an ioredis client',
    message: () => 'RedisRevocationStore needs an ioredis client',
  },
  TRV_AUTH_REDIS_PREFIX: {
    when: "`RedisRevocationStore`'s `prefix` is not a string",
    message: () => 'prefix must be a string',
  },
  TRV_AUTH_DURABLE: {
    when: '`durable` is not a SqlRevocationStore',
    message: () => 'durable must be a SqlRevocationStore (a store with entries())',
  },
  TRV_AUTH_DURABLE_MIRROR: {
    when: '`durable` is given without `mirror`',
    message: () => 'durable needs the mirror option',
  },
  TRV_AUTH_DURABLE_CLIENT: {
    when: '`durable` is given with a Redis client lacking `get`, `info` or `pexpire`',
    message: (method: string) => `durable needs an ioredis client (missing ${method})`,
  },
  TRV_AUTH_MIRROR_CHANNEL: {
    when: '`mirror.channel` is not a RedisChannel of @trivium/redis-bus',
    message: () => 'mirror.channel must be a RedisChannel of @trivium/redis-bus',
  },
  TRV_AUTH_MIRROR_CLIENT: {
    when: "the mirror's Redis client lacks a command it needs",
    message: (method: string) => `the mirror needs an ioredis client (missing ${method})`,
  },
  TRV_AUTH_MIRROR_SAME_REDIS: {
    when: 'the mirror channel and the client are not on the same Redis (one a Cluster, the other not)',
    message: (clientIsCluster: boolean) =>
      clientIsCluster
        ? 'on a Redis Cluster the mirror channel must be on the same Cluster (a RedisChannel whose RedisPubSub was given the Cluster)'
        : 'the mirror channel is on a Redis Cluster but client is not: give both the same Redis',
  },
  TRV_AUTH_MIRROR_CLUSTER: {
    when: "the mirror's Redis Cluster lacks `spublish` or `cluster`",
    message: (method: string) => `the mirror needs an ioredis Cluster (missing ${method})`,
  },
  TRV_AUTH_MIRROR_TIMING: {
    when: '`mirror.heartbeatMs`, `maxSilenceMs` or `pollMs` is not a positive integer',
    message: (name: string) => `mirror.${name} must be a positive integer (milliseconds)`,
  },
  TRV_AUTH_MIRROR_SILENCE: {
    when: '`mirror.maxSilenceMs` is less than `heartbeatMs`',
    message: () => 'mirror.maxSilenceMs must be at least heartbeatMs',
  },
})
