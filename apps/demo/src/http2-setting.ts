// HTTP2, TLS_CERT, TLS_KEY: serving HTTP/2 (PROTOCOL.md "HTTP/2"). `HTTP2=1` with a certificate is h2 over
// TLS with HTTP/1.1 (and WebSocket upgrades) on the same port, ALPN choosing; `HTTP2=h2c` is cleartext
// HTTP/2 only (prior knowledge, as service meshes and load balancers speak it to their backends).
import type { Http2TlsSetting } from '@trivium/core'
import { ConfigError } from './config-error.js'
import { readPem } from './redis-topology.js'

export type Http2Setting = Http2TlsSetting | 'h2c' | undefined

export function parseHttp2(env: NodeJS.ProcessEnv): Http2Setting {
  const mode = env.HTTP2 || undefined
  const certFile = env.TLS_CERT || undefined
  const keyFile = env.TLS_KEY || undefined
  if (mode === undefined || mode === '0' || mode === 'off') {
    if (certFile !== undefined || keyFile !== undefined)
      throw new ConfigError(
        'TLS_CERT and TLS_KEY serve HTTP/2 over TLS: set HTTP2=1 as well (HTTP/1.1 clients keep working on the same port)',
      )
    return undefined
  }
  if (mode === 'h2c') {
    if (certFile !== undefined || keyFile !== undefined)
      throw new ConfigError(
        'HTTP2=h2c is cleartext: unset TLS_CERT and TLS_KEY, or use HTTP2=1 for h2 over TLS',
      )
    return 'h2c'
  }
  if (mode !== '1')
    throw new ConfigError(`HTTP2 must be 1 (h2 over TLS, with TLS_CERT and TLS_KEY), h2c or off, got ${mode}`)
  if (certFile === undefined || keyFile === undefined)
    throw new ConfigError(
      'HTTP2=1 needs TLS_CERT and TLS_KEY (PEM files): browsers speak HTTP/2 only over TLS',
    )
  return { cert: readPem('TLS_CERT', certFile), key: readPem('TLS_KEY', keyFile) }
}
