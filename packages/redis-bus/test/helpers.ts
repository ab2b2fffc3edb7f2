// Shared by the tests (not a test file itself: tap only runs *.test.ts).
import { randomBytes } from 'node:crypto'
import type { LoggerLike } from '@trivium/redis-bus'
import type { Session } from '@trivium/wire/sessions'
import { waitBound } from '../../../scripts/test/waits.js'

export const REDIS_URL = 'redis://127.0.0.1:6379'

export function uniq(label: string): string {
  return `test_${randomBytes(6).toString('hex')}:${label}`
}

export interface LogEntry {
  level: 'info' | 'warn' | 'error'
  obj: Record<string, unknown>
  msg: string
}

export function captureLogger(): LoggerLike & { entries: LogEntry[] } {
  const entries: LogEntry[] = []
  const at = (level: LogEntry['level']) => (obj: object, msg: string) => {
    entries.push({ level, obj: obj as Record<string, unknown>, msg })
  }
  return { entries, info: at('info'), warn: at('warn'), error: at('error') }
}

export function fakeSession(id: string): { session: Session; got: Array<[string, unknown]> } {
  const got: Array<[string, unknown]> = []
  const session: Session = {
    id,
    protocol: 'test',
    userId: undefined,
    tokenId: undefined,
    topics: new Set(),
    push(topic, json) {
      got.push([topic, JSON.parse(json)])
    },
    close() {},
  }
  return { session, got }
}

export async function until(cond: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const start = Date.now()
  while (!cond()) {
    if (Date.now() - start > waitBound(timeoutMs)) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}
