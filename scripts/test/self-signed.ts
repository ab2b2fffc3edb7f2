// A self-signed certificate for 127.0.0.1 (and localhost), made with openssl for one test file: HTTP/2 over
// TLS needs one (browsers and Node's clients speak h2 only over TLS, chosen by ALPN).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface SelfSigned {
  key: Buffer
  cert: Buffer
  /** The files (for a process started with TLS_KEY / TLS_CERT); removed by `remove()`. */
  keyFile: string
  certFile: string
  remove(): void
}

export function selfSigned(): SelfSigned {
  const dir = mkdtempSync(join(tmpdir(), 'trivium-h2-'))
  const keyFile = join(dir, 'key.pem')
  const certFile = join(dir, 'cert.pem')
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-days', '2', '-keyout', keyFile, '-out', certFile, '-subj', '/CN=127.0.0.1'],
      ...['-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'],
    ],
    { stdio: 'pipe' },
  )
  return {
    key: readFileSync(keyFile),
    cert: readFileSync(certFile),
    keyFile,
    certFile,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}
