// The Redis variant of the revocation list: key `<prefix><jti>`, expiry by Redis TTL. Typed against the
// few ioredis methods it calls, so the package's types do not need the optional peer `ioredis`.
import { ServiceUnavailableException } from '@trivium/core'
import { checkJti, checkTtl, type RevocationStore, STORE_UNAVAILABLE } from './revocation.js'

/** The part of an ioredis client the store uses (an ioredis `Redis` or `Cluster` fits). */
export interface RevocationRedisClient {
  readonly status: string
  set(key: string, value: string): Promise<unknown>
  set(key: string, value: string, mode: 'EX', seconds: number): Promise<unknown>
  exists(key: string): Promise<number>
  del(key: string): Promise<number>
  disconnect(): void
}

export interface RedisRevocationStoreOptions {
  /** An ioredis client. Prefer `enableOfflineQueue: false` so an outage fails fast. */
  client: RevocationRedisClient
  /** Key prefix (default `blacklist:token:`). */
  prefix?: string
  /** A command that has not answered after this many ms fails closed (default 1000). */
  commandTimeoutMs?: number
  /** Close the client in `close()` (default false: the caller owns it). */
  closeClient?: boolean
}

export const DEFAULT_REDIS_PREFIX = 'blacklist:token:'

/** Key-value variant: key `<prefix><jti>`, expiry by Redis TTL. */
export class RedisRevocationStore implements RevocationStore {
  readonly prefix: string
  private readonly client: RevocationRedisClient
  private readonly timeoutMs: number
  private readonly closeClient: boolean

  constructor(options: RedisRevocationStoreOptions) {
    if (!options || typeof options.client !== 'object' || options.client === null) {
      throw new TypeError('@trivium/auth: RedisRevocationStore needs an ioredis client')
    }
    this.client = options.client
    this.prefix = options.prefix ?? DEFAULT_REDIS_PREFIX
    if (typeof this.prefix !== 'string') throw new TypeError('@trivium/auth: prefix must be a string')
    this.timeoutMs = options.commandTimeoutMs ?? 1000
    this.closeClient = options.closeClient ?? false
  }

  private async run<T>(command: () => Promise<T>): Promise<T> {
    const status = this.client.status
    // Not connected and not about to be: answer 503 now rather than queueing the command.
    if (status === 'end' || status === 'close' || status === 'reconnecting') {
      throw new ServiceUnavailableException(STORE_UNAVAILABLE)
    }
    let timer: NodeJS.Timeout | undefined
    try {
      return await Promise.race([
        command(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new ServiceUnavailableException(STORE_UNAVAILABLE)), this.timeoutMs)
        }),
      ])
    } catch {
      throw new ServiceUnavailableException(STORE_UNAVAILABLE)
    } finally {
      clearTimeout(timer)
    }
  }

  async add(jti: string, ttlSeconds?: number): Promise<void> {
    const key = this.prefix + checkJti(jti)
    const ttl = checkTtl(ttlSeconds)
    await this.run(() =>
      ttl === undefined ? this.client.set(key, '1') : this.client.set(key, '1', 'EX', ttl),
    )
  }

  async contains(jti: string): Promise<boolean> {
    const key = this.prefix + jti
    return (await this.run(() => this.client.exists(key))) === 1
  }

  async remove(jti: string): Promise<void> {
    const key = this.prefix + jti
    await this.run(() => this.client.del(key))
  }

  /** Redis expires entries itself; nothing to do. */
  async cleanup(): Promise<number> {
    return 0
  }

  async close(): Promise<void> {
    if (this.closeClient) this.client.disconnect()
  }
}
