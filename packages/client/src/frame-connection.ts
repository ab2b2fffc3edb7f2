// The connection side of the WebSocket and TCP clients: one multiplexed connection of frames at a time,
// reconnection with backoff + jitter, PING/PONG heartbeats, GOAWAY drains, request ids, and the rule that
// nothing in flight ever hangs when the connection goes away (every pending call fails or resumes).
import { type Frame, FrameError, FrameType } from '@trivium/wire'
import { BaseClient, checkNonNegative, optionError } from './base.js'
import type { Conn } from './call-table.js'
import {
  CLIENT_CLOSED_MESSAGE,
  NetworkException,
  TriviumError,
  toClientError,
  ValidationException,
} from './errors.js'
import type { CommonClientOptions, ReconnectOptions } from './types.js'

const EMPTY = new Uint8Array(0)

/** One open physical connection, as a transport provides it. */
export interface FrameLink {
  send(frame: Frame): void
  /** Closes the connection; resolves once it is closed (forcibly after a short grace). */
  close(reason: string): Promise<void>
}

export interface LinkHandlers {
  frame(frame: Frame): void
  /** Called once when the connection is gone, whoever closed it. */
  closed(reason: string): void
  /** Bad data from the server (a frame that does not decode); the link closes itself after it. */
  protocolError(error: Error): void
}

export type FrameClientOptions = CommonClientOptions & ReconnectOptions

export abstract class FrameConnection extends BaseClient {
  protected readonly reconnectAttempts: number
  protected readonly reconnectDelayMs: number
  protected readonly reconnectMaxDelayMs: number
  protected readonly reconnectJitter: number
  protected readonly pingIntervalMs: number
  /** The connection new calls use; undefined while connecting or after a drain. */
  protected conn: Conn | undefined
  private readonly oldConns = new Set<Conn>()
  private connecting: Promise<Conn> | undefined
  private everConnected = false
  protected userClosed = false
  private nextRequestId = 0
  private readonly sleepers = new Set<() => void>()

  constructor(options: FrameClientOptions) {
    super(options)
    this.reconnectAttempts = checkNonNegative('reconnectAttempts', options.reconnectAttempts, 10)
    this.reconnectDelayMs = checkNonNegative('reconnectDelayMs', options.reconnectDelayMs, 500)
    this.reconnectMaxDelayMs = checkNonNegative('reconnectMaxDelayMs', options.reconnectMaxDelayMs, 30_000)
    const jitter = options.reconnectJitter ?? 0.2
    if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1)) {
      throw optionError('reconnectJitter must be a number from 0 to 1')
    }
    this.reconnectJitter = jitter
    this.pingIntervalMs = checkNonNegative('pingIntervalMs', options.pingIntervalMs, 30_000)
  }

  /** Human-readable target for messages (`ws://host:port/ws`, `host:port`). */
  protected abstract readonly target: string
  /** Opens one connection; rejects with NetworkException when it cannot. */
  protected abstract openLink(handlers: LinkHandlers): Promise<FrameLink>
  /** A frame received on `conn`. */
  protected abstract onFrame(conn: Conn, frame: Frame): void
  /** A connection is up (a reconnect included): subscriptions are renewed on it. */
  protected abstract connectionOpened(conn: Conn): void

  // ---- connection lifecycle ----

  async connect(): Promise<void> {
    await this.ensureConnection(undefined)
  }

  protected ensureConnection(signal: AbortSignal | undefined): Promise<Conn> {
    if (this.userClosed) return Promise.reject(new NetworkException(CLIENT_CLOSED_MESSAGE))
    const conn = this.conn
    if (conn && !conn.closed && !conn.draining) return Promise.resolve(conn)
    if (!this.connecting) this.startConnecting(1, false)
    const connecting = this.connecting as Promise<Conn>
    if (!signal) return connecting
    return new Promise<Conn>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason)
        return
      }
      const onAbort = () => reject(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      connecting.then(
        (c) => {
          signal.removeEventListener('abort', onAbort)
          resolve(c)
        },
        (err) => {
          signal.removeEventListener('abort', onAbort)
          reject(err)
        },
      )
    })
  }

  /** Starts a connect loop of up to `attempts` tries (the first one immediate unless `delayFirst`). */
  private startConnecting(attempts: number, delayFirst: boolean): Promise<Conn> {
    this.setState(this.everConnected ? 'reconnecting' : 'connecting')
    const p = this.connectLoop(attempts, delayFirst)
    this.connecting = p
    p.then(
      () => {
        if (this.connecting === p) this.connecting = undefined
      },
      () => {
        if (this.connecting === p) this.connecting = undefined
      },
    )
    return p
  }

  private async connectLoop(attempts: number, delayFirst: boolean): Promise<Conn> {
    let lastError: unknown
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0 || delayFirst) await this.sleep(this.backoff(attempt))
      if (this.userClosed) throw new NetworkException(CLIENT_CLOSED_MESSAGE)
      try {
        const conn = await this.openConn()
        if (this.userClosed) {
          await conn.link.close('client closed')
          throw new NetworkException(CLIENT_CLOSED_MESSAGE)
        }
        const reconnected = this.everConnected
        this.everConnected = true
        this.conn = conn
        this.setState('connected')
        this.emit('connected', { reconnected })
        this.connectionOpened(conn)
        return conn
      } catch (err) {
        if (this.userClosed) throw new NetworkException(CLIENT_CLOSED_MESSAGE)
        lastError = err
        this.emit('error', err instanceof TriviumError ? err : new NetworkException(String(err)))
      }
    }
    this.setState('idle')
    const detail = lastError instanceof Error ? lastError.message : String(lastError)
    throw new NetworkException(
      attempts > 1 ? `Could not reconnect to ${this.target} after ${attempts} attempts: ${detail}` : detail,
      { cause: lastError },
    )
  }

  /** Delay before attempt `n` (1-based for retries): exponential, capped, ± jitter. */
  private backoff(attempt: number): number {
    const base = Math.min(this.reconnectMaxDelayMs, this.reconnectDelayMs * 2 ** Math.max(0, attempt - 1))
    const spread = base * this.reconnectJitter
    return Math.max(0, Math.round(base - spread + Math.random() * 2 * spread))
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.sleepers.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.sleepers.add(done)
    })
  }

  private async openConn(): Promise<Conn> {
    let conn: Conn | undefined
    const early: Array<() => void> = []
    const link = await this.openLink({
      frame: (frame) => {
        if (conn) this.onFrame(conn, frame)
      },
      closed: (reason) => {
        if (conn) this.onClosed(conn, reason)
        else early.push(() => conn && this.onClosed(conn, reason))
      },
      protocolError: (error) => {
        this.emit(
          'error',
          new NetworkException(`Bad data from the server: ${error.message}`, { cause: error }),
        )
      },
    })
    conn = {
      link,
      pending: new Map(),
      draining: false,
      closed: false,
      heartbeat: undefined,
      awaitingPong: undefined,
    }
    for (const fn of early) fn()
    if (!conn.closed && this.pingIntervalMs > 0) this.startHeartbeat(conn)
    return conn
  }

  private startHeartbeat(conn: Conn): void {
    const c = conn
    c.heartbeat = setInterval(() => {
      if (c.closed) return
      if (c.awaitingPong !== undefined) {
        void c.link.close('no PONG within the ping interval')
        this.onClosed(c, 'no PONG within the ping interval')
        return
      }
      c.awaitingPong = this.allocateId(c)
      this.sendFrame(c, { type: FrameType.PING, requestId: c.awaitingPong, payload: EMPTY })
    }, this.pingIntervalMs)
    // Node: a heartbeat alone must not keep the process alive.
    ;(c.heartbeat as { unref?: () => void }).unref?.()
  }

  private onClosed(conn: Conn, reason: string): void {
    if (conn.closed) return
    conn.closed = true
    if (conn.heartbeat) clearInterval(conn.heartbeat)
    this.oldConns.delete(conn)
    const message = this.userClosed ? CLIENT_CLOSED_MESSAGE : `Connection lost: ${reason}`
    this.failPending(conn, message)
    if (conn !== this.conn) return // a drained (GOAWAY) connection: its replacement is already there
    this.conn = undefined
    if (this.userClosed) return
    const willReconnect = this.reconnectAttempts > 0
    this.emit('disconnected', { reason, willReconnect })
    if (!willReconnect) {
      this.setState('idle')
      return
    }
    if (!this.connecting) {
      this.startConnecting(this.reconnectAttempts, true).catch((err) =>
        this.emit('error', toClientError(err) as TriviumError),
      )
    }
  }

  private failPending(conn: Conn, message: string): void {
    const pending = [...conn.pending.values()]
    conn.pending.clear()
    for (const entry of pending) {
      if (entry.kind === 'requests') entry.call.finish(new NetworkException(message))
      else if (entry.kind === 'stream')
        entry.queue.put(
          this.userClosed ? { kind: 'error', error: new NetworkException(message) } : { kind: 'lost' },
        )
      else entry.reject(new NetworkException(message))
    }
  }

  /** Stops using `conn` for new calls (GOAWAY, or a refreshed token) and opens a replacement. */
  protected drain(conn: Conn, delayFirst: boolean): void {
    if (conn.draining || conn.closed) return
    conn.draining = true
    this.oldConns.add(conn)
    if (this.conn === conn) this.conn = undefined
    if (conn.pending.size === 0) void conn.link.close('drained')
    if (!this.connecting && !this.userClosed) {
      this.startConnecting(Math.max(1, this.reconnectAttempts), delayFirst).catch((err) =>
        this.emit('error', toClientError(err) as TriviumError),
      )
    }
  }

  /** Moves new calls to a fresh connection (WebSocket: after a token refresh, the token is per connection). */
  protected drainCurrent(): void {
    if (this.conn) this.drain(this.conn, false)
  }

  async close(): Promise<void> {
    if (this.userClosed) return
    this.userClosed = true
    for (const wake of [...this.sleepers]) wake()
    const conns = [...this.oldConns]
    if (this.conn) conns.push(this.conn)
    this.conn = undefined
    this.setState('closed')
    await Promise.all(
      conns.map(async (c) => {
        this.failPending(c, CLIENT_CLOSED_MESSAGE)
        if (c.heartbeat) clearInterval(c.heartbeat)
        await c.link.close('client closed')
        this.onClosed(c, 'client closed')
      }),
    )
    await this.connecting?.catch(() => {})
  }

  // ---- sending ----

  protected allocateId(conn: Conn): number {
    for (;;) {
      this.nextRequestId = this.nextRequestId >= 0xffffffff ? 1 : this.nextRequestId + 1
      if (!conn.pending.has(this.nextRequestId) && conn.awaitingPong !== this.nextRequestId)
        return this.nextRequestId
    }
  }

  protected sendFrame(conn: Conn, frame: Frame): void {
    try {
      conn.link.send(frame)
    } catch (err) {
      if (err instanceof FrameError) throw new ValidationException(err.message)
      throw new NetworkException(`Connection lost: ${(err as Error).message}`, { cause: err })
    }
  }

  protected cancel(conn: Conn, id: number): void {
    if (conn.closed) return
    try {
      conn.link.send({ type: FrameType.CANCEL, requestId: id, payload: EMPTY })
    } catch {
      // the connection is going away: nothing to cancel
    }
    if (conn.draining && conn.pending.size === 0) void conn.link.close('drained')
  }
}
