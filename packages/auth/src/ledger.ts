// The ledger of issued tokens: which jtis were issued to which user, until when, and whether a refresh
// token was already exchanged. It lets the refresh flow rotate atomically (consume) and revoke all of a
// user's tokens when a used refresh token is presented again (theft).

export interface LedgerEntry {
  jti: string
  /** Expiry, seconds since epoch. */
  exp: number
}

export interface TokenLedger {
  /** Remembers a token issued to `userId`. */
  record(userId: number, jti: string, exp: number): Promise<void>
  /**
   * Marks a refresh token as exchanged. Resolves true the first time for a recorded jti, false when
   * it was already consumed or never recorded: exactly one of concurrent callers wins.
   */
  consume(jti: string): Promise<boolean>
  /** Flags a refresh token as presented again after its exchange (theft). */
  markReused(jti: string): Promise<void>
  /** True once markReused was called for the jti. */
  isReused(jti: string): Promise<boolean>
  /** Unexpired tokens of the user (exp > nowSec). */
  listActive(userId: number, nowSec: number): Promise<LedgerEntry[]>
  /** Forgets expired tokens; resolves to how many. */
  cleanup(nowSec: number): Promise<number>
  /** Optional: creates or updates the ledger's tables; the plugin calls it at registration. */
  migrate?(): Promise<void>
}

interface Row {
  userId: number
  exp: number
  consumed: boolean
  reused: boolean
}

/** In-process ledger (one instance only). */
export class MemoryTokenLedger implements TokenLedger {
  private readonly rows = new Map<string, Row>()

  async record(userId: number, jti: string, exp: number): Promise<void> {
    this.rows.set(jti, { userId, exp, consumed: false, reused: false })
  }

  async consume(jti: string): Promise<boolean> {
    const row = this.rows.get(jti)
    if (row === undefined || row.consumed) return false
    row.consumed = true
    return true
  }

  async markReused(jti: string): Promise<void> {
    const row = this.rows.get(jti)
    if (row) row.reused = true
  }

  async isReused(jti: string): Promise<boolean> {
    return this.rows.get(jti)?.reused === true
  }

  async listActive(userId: number, nowSec: number): Promise<LedgerEntry[]> {
    const out: LedgerEntry[] = []
    for (const [jti, row] of this.rows)
      if (row.userId === userId && row.exp > nowSec) out.push({ jti, exp: row.exp })
    return out
  }

  async cleanup(nowSec: number): Promise<number> {
    let n = 0
    for (const [jti, row] of this.rows) {
      if (row.exp <= nowSec) {
        this.rows.delete(jti)
        n++
      }
    }
    return n
  }
}
