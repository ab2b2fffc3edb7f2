// One call, raw over a real socket, with its per-call metadata as each transport carries it: HTTP headers
// (`Trivium-Timeout-Ms`, `Idempotency-Key`, `Authorization`), or a REQUEST frame's metadata (`timeout_ms`,
// `idempotency_key`; TCP also `auth_token` and `format`; WebSocket opened with `metadata=1`, the token in
// the query). Used by the deadline tests here and in apps/demo.
import { connect } from 'node:net'
import {
  decodeWsFrame,
  encodeMetadata,
  encodeTcpFrame,
  encodeWsFrame,
  type Frame,
  FrameType,
  TcpFrameReader,
} from '@trivium/wire'
import WebSocket from 'ws'
import { until } from './raw-frames.ts'

export interface RawTarget {
  transport: 'http' | 'websocket' | 'tcp'
  /** `http://127.0.0.1:<port>` */
  httpUrl: string
  /** `ws://127.0.0.1:<port>/ws` */
  wsUrl: string
  tcpPort: number
}

export interface RawAnswer {
  /** The HTTP status; on frames `'ok'` for RESPONSE, the error body's statusCode for ERROR. */
  status: number | 'ok'
  /** The JSON answer; `{}` for a binary one (see `bytes`). */
  body: Record<string, unknown>
  /** The answer's bytes. */
  bytes: Uint8Array
  /** HTTP: the Content-Type of the answer. */
  contentType?: string | null
}

/** The answer's JSON, or `{}` when it is in the binary format. */
const parsed = (bytes: Uint8Array, binary: boolean): Record<string, unknown> =>
  binary ? {} : (JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>)

export interface RawMeta {
  /** The request's format (default json): HTTP Content-Type, WebSocket `format`, TCP `format` metadata. */
  format?: 'json' | 'binary'
  timeout?: string
  key?: string
  token?: string
  /** HTTP only: the Accept header (frames answer in the request's format). */
  accept?: string
}

/** `body` is the JSON text of the request, or its bytes in `meta.format` (sent as is: hostile bodies too). */
export async function rawCall(
  target: RawTarget,
  endpoint: string,
  method: string,
  path: string,
  body: string | Uint8Array,
  meta: RawMeta = {},
): Promise<RawAnswer> {
  const format = meta.format ?? 'json'
  if (target.transport === 'http') {
    const type = format === 'json' ? 'application/json' : 'application/x-platform-binary'
    const headers: Record<string, string> = { 'content-type': type }
    if (meta.timeout) headers['trivium-timeout-ms'] = meta.timeout
    if (meta.key) headers['idempotency-key'] = meta.key
    if (meta.token) headers.authorization = `Bearer ${meta.token}`
    if (meta.accept) headers.accept = meta.accept
    const res = await fetch(`${target.httpUrl}${path}`, { method, headers, body: body as BodyInit })
    const bytes = new Uint8Array(await res.arrayBuffer())
    const contentType = res.headers.get('content-type')
    const binary = contentType === 'application/x-platform-binary'
    return { status: res.status, body: parsed(bytes, binary), bytes, contentType }
  }
  const metadata: Record<string, string> = {}
  if (meta.timeout) metadata.timeout_ms = meta.timeout
  if (meta.key) metadata.idempotency_key = meta.key
  const json = typeof body === 'string' ? new TextEncoder().encode(body) : body
  const payload = (m: Record<string, string>) => {
    const head = encodeMetadata(m)
    const out = new Uint8Array(head.length + json.length)
    out.set(head)
    out.set(json, head.length)
    return out
  }
  const request = (m: Record<string, string>): Frame => ({
    type: FrameType.REQUEST,
    requestId: 1,
    endpoint,
    payload: payload(m),
  })
  const frames: Frame[] = []
  const answer = async (): Promise<RawAnswer> => {
    await until(() => frames.length > 0, `the answer of ${endpoint} on ${target.transport}`)
    const f = frames[0] as Frame
    const ok = f.type === FrameType.RESPONSE
    const body = parsed(f.payload, ok && format === 'binary')
    return { status: ok ? 'ok' : (body.statusCode as number), body, bytes: f.payload }
  }
  if (target.transport === 'websocket') {
    const token = meta.token ? `&token=${encodeURIComponent(meta.token)}` : ''
    const ws = new WebSocket(`${target.wsUrl}?format=${format}&metadata=1${token}`, { maxPayload: 4 << 20 })
    ws.on('error', () => {})
    ws.on('message', (data: Buffer) => frames.push(decodeWsFrame(new Uint8Array(data))))
    await new Promise((resolve) => ws.once('open', resolve))
    ws.send(encodeWsFrame(request(metadata)))
    try {
      return await answer()
    } finally {
      ws.terminate()
    }
  }
  if (meta.token) metadata.auth_token = meta.token
  const socket = connect(target.tcpPort, '127.0.0.1')
  socket.on('error', () => {})
  const reader = new TcpFrameReader({ maxFrameBytes: 4 << 20 })
  socket.on('data', (chunk) => frames.push(...reader.push(chunk)))
  socket.write(encodeTcpFrame(request({ format, ...metadata })))
  try {
    return await answer()
  } finally {
    socket.destroy()
  }
}
