// Types of scripts/redis-cluster.mjs for the TypeScript tests that use it.
import type { ChildProcess } from 'node:child_process'
export interface RedisCluster {
  ports: number[]
  dir: string
  nodes: { host: string; port: number }[]
  process(port: number): ChildProcess | undefined
  kill(port: number): Promise<void>
  cli(port: number, ...args: (string | number)[]): Promise<string>
  stop(): Promise<void>
}
export declare function redisCli(port: number, ...args: (string | number)[]): Promise<string>
export declare function ownerOf(port: number, key: string): Promise<{ slot: number; port: number }>
export declare function startCluster(options: {
  ports: number[]
  replicas?: number
  redisArgs?: string[]
  timeoutMs?: number
}): Promise<RedisCluster>
export declare function migrateSlot(options: {
  slot: number
  fromPort: number
  toPort: number
  allPorts?: number[]
  onMigrating?: () => Promise<void> | void
  batch?: number
}): Promise<{ moved: number }>
