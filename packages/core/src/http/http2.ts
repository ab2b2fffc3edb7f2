// HTTP/2 serving (PROTOCOL.md "HTTP/2"): the Fastify factory options that turn it on with Trivium's
// limits for hostile peers, and the shutdown of HTTP/2 sessions (Node 20's http2 server closes none of
// them on `server.close()`, so one idle session would hold `app.close()` until its idle timeout).
import type { Http2Session, SecureServerOptions, ServerOptions, Settings } from 'node:http2'
import type { FastifyInstance } from 'fastify'

/**
 * The SETTINGS Trivium's HTTP/2 server announces. Node's defaults allow 2³²−1 concurrent streams on one
 * connection and a 64 KiB header list; these match what one HTTP/1.1 connection can cost.
 */
export const HTTP2_SETTINGS: Readonly<Settings> = Object.freeze({
  /** Streams open at once on one connection (RFC 9113 §6.5.2 recommends no less than 100). */
  maxConcurrentStreams: 100,
  /** The header list of one request, in bytes as RFC 9113 counts them: Node's HTTP/1.1 `maxHeaderSize` (16 KiB). */
  maxHeaderListSize: 16 * 1024,
  /** A server never receives pushes; it sends none either. */
  enablePush: false,
})

/**
 * Node's http2 session limits, each written out (most are Node's defaults, listed so the documented
 * values cannot drift with a Node release). A peer past one loses its session (PROTOCOL.md "HTTP/2").
 */
export const HTTP2_LIMITS = Object.freeze({
  /** Malformed frames before the session is closed with GOAWAY (Node's default 1000). */
  maxSessionInvalidFrames: 1000,
  /** Streams refused with REFUSED_STREAM (past `maxConcurrentStreams`) before GOAWAY ENHANCE_YOUR_CALM (Node's 100). */
  maxSessionRejectedStreams: 100,
  /** Header fields in one request (Node's default 128, as `maxHeadersCount` bounds HTTP/1.1's to 2000). */
  maxHeaderListPairs: 128,
  /** Entries in one SETTINGS frame (Node's default 32). */
  maxSettings: 32,
  /** PINGs sent and not acknowledged (Node's default 10). */
  maxOutstandingPings: 10,
  /** SETTINGS sent and not acknowledged (Node's default 10). */
  maxOutstandingSettings: 10,
  /** Memory one session may hold for its streams, in MB (Node's default 10). */
  maxSessionMemory: 10,
})

/** `HTTP2=1` with a certificate: h2 over TLS, HTTP/1.1 on the same port (ALPN chooses). */
export interface Http2TlsSetting {
  key: string | Buffer
  cert: string | Buffer
  /** Whether HTTP/1.1 clients (and WebSocket upgrades) are served on the same port (default true). */
  allowHTTP1?: boolean
}

/** Fastify factory options serving HTTP/2, as `triviumHttp2Options()` returns them. */
export type TriviumHttp2Options =
  | { http2: true; https: SecureServerOptions & { allowHTTP1: boolean } }
  | { http2: true; http: ServerOptions }

/**
 * What to pass to `Fastify()` to serve HTTP/2 with Trivium's limits, beside `triviumFactoryOptions()`:
 * `Fastify({ ...triviumFactoryOptions(), ...triviumHttp2Options({ key, cert }) })` for h2 over TLS
 * (HTTP/1.1 clients on the same port), `triviumHttp2Options('h2c')` for cleartext HTTP/2 only (prior
 * knowledge, as service meshes speak it).
 */
export function triviumHttp2Options(setting: Http2TlsSetting | 'h2c'): TriviumHttp2Options {
  const limits = { ...HTTP2_LIMITS, settings: { ...HTTP2_SETTINGS } }
  if (setting === 'h2c') return { http2: true, http: limits }
  if (typeof setting !== 'object' || setting === null || !setting.key || !setting.cert) {
    throw new TypeError("triviumHttp2Options: pass { key, cert } (h2 over TLS) or 'h2c'")
  }
  const { key, cert, allowHTTP1 = true } = setting
  return { http2: true, https: { ...limits, key, cert, allowHTTP1 } }
}

/**
 * The open HTTP/2 sessions of the app's server. At shutdown each gets GOAWAY (NO_ERROR) and closes once
 * its streams are done: unary calls within the shutdown grace (drain.ts), event streams at once (sse.ts).
 */
export class Http2Sessions {
  readonly #open = new Set<Http2Session>()
  #closing = false

  constructor(fastify: FastifyInstance) {
    // Only an HTTP/2 server emits `session` (an HTTP/1 one never does).
    fastify.server.on('session', (session: Http2Session) => {
      if (this.#closing) {
        session.close()
        return
      }
      this.#open.add(session)
      session.once('close', () => this.#open.delete(session))
    })
  }

  shutdown(): void {
    this.#closing = true
    for (const session of this.#open) session.close()
  }
}
