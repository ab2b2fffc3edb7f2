// HTTP/2 frames written by hand over a cleartext socket (RFC 9113), for the hostile cases node:http2's
// client will not send: HEADERS then RST_STREAM in a loop, SETTINGS floods, oversized header lists. The
// header block is HPACK "literal without indexing, new name" with raw (non-Huffman) strings, which every
// decoder must accept (RFC 7541 §6.2.2).
import { connect, type Socket } from 'node:net'

export const FRAME = {
  DATA: 0,
  HEADERS: 1,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  CONTINUATION: 9,
} as const
export const FLAG = { END_STREAM: 0x1, END_HEADERS: 0x4, ACK: 0x1 } as const
/** RFC 9113 §7 error codes. */
export const H2_ERROR = {
  NO_ERROR: 0,
  PROTOCOL_ERROR: 1,
  INTERNAL_ERROR: 2,
  FRAME_SIZE_ERROR: 6,
  REFUSED_STREAM: 7,
  CANCEL: 8,
  ENHANCE_YOUR_CALM: 11,
} as const

/** SETTINGS_MAX_FRAME_SIZE's initial value (RFC 9113 §6.5.2). */
const MAX_FRAME = 16_384
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1')

export interface Frame {
  type: number
  flags: number
  streamId: number
  payload: Buffer
}

export function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Buffer = Buffer.alloc(0),
): Buffer {
  const head = Buffer.alloc(9)
  head.writeUIntBE(payload.length, 0, 3)
  head[3] = type
  head[4] = flags
  head.writeUInt32BE(streamId & 0x7fffffff, 5)
  return Buffer.concat([head, payload])
}

/** An HPACK integer with an `n`-bit prefix (RFC 7541 §5.1). */
function hpackInt(value: number, n: number, first = 0): number[] {
  const max = (1 << n) - 1
  if (value < max) return [first | value]
  const out = [first | max]
  let rest = value - max
  while (rest >= 128) {
    out.push((rest % 128) + 128)
    rest = Math.floor(rest / 128)
  }
  out.push(rest)
  return out
}

function hpackString(text: string): Buffer {
  const bytes = Buffer.from(text, 'latin1')
  return Buffer.concat([Buffer.from(hpackInt(bytes.length, 7)), bytes])
}

/** A header block of `[name, value]` pairs, each a literal without indexing. */
export function headerBlock(headers: [string, string][]): Buffer {
  return Buffer.concat(
    headers.flatMap(([name, value]) => [Buffer.from([0]), hpackString(name), hpackString(value)]),
  )
}

/** HEADERS, then CONTINUATION frames for a block over the default 16 KiB frame size. */
export function headersFrame(streamId: number, headers: [string, string][], endStream: boolean): Buffer {
  const block = headerBlock(headers)
  const parts: Buffer[] = []
  for (let at = 0; at < block.length || at === 0; at += MAX_FRAME)
    parts.push(block.subarray(at, at + MAX_FRAME))
  return Buffer.concat(
    parts.map((part, i) => {
      const last = i === parts.length - 1 ? FLAG.END_HEADERS : 0
      if (i > 0) return frame(FRAME.CONTINUATION, last, streamId, part)
      return frame(FRAME.HEADERS, last | (endStream ? FLAG.END_STREAM : 0), streamId, part)
    }),
  )
}

export function rstStream(streamId: number, code: number): Buffer {
  const payload = Buffer.alloc(4)
  payload.writeUInt32BE(code)
  return frame(FRAME.RST_STREAM, 0, streamId, payload)
}

/** A SETTINGS frame of `[id, value]` entries. */
export function settings(entries: [number, number][] = []): Buffer {
  const payload = Buffer.alloc(entries.length * 6)
  entries.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, i * 6)
    payload.writeUInt32BE(value, i * 6 + 2)
  })
  return frame(FRAME.SETTINGS, 0, 0, payload)
}

/** A request's pseudo-headers (`:authority` 127.0.0.1). */
export function request(method: string, path: string, more: [string, string][] = []): [string, string][] {
  return [[':method', method], [':scheme', 'http'], [':path', path], [':authority', '127.0.0.1'], ...more]
}

/** One cleartext HTTP/2 connection (prior knowledge): what it received, frame by frame. */
export class RawH2 {
  readonly frames: Frame[] = []
  closed = false
  readonly #socket: Socket
  #buffer = Buffer.alloc(0)

  private constructor(socket: Socket) {
    this.#socket = socket
    socket.on('data', (chunk: Buffer) => this.#read(chunk))
    socket.on('close', () => {
      this.closed = true
    })
    socket.on('error', () => {})
  }

  /** Connects, sends the preface and an empty SETTINGS, and acknowledges the server's SETTINGS. */
  static async open(port: number): Promise<RawH2> {
    const socket = connect(port, '127.0.0.1')
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve)
      socket.once('error', reject)
    })
    const raw = new RawH2(socket)
    socket.write(Buffer.concat([PREFACE, settings(), frame(FRAME.SETTINGS, FLAG.ACK, 0)]))
    return raw
  }

  /** Writes `data`; false once the connection is gone (a flood's later writes may meet a closed socket). */
  write(data: Buffer): Promise<boolean> {
    if (this.closed || this.#socket.destroyed) return Promise.resolve(false)
    return new Promise((resolve) => this.#socket.write(data, (err) => resolve(!err)))
  }

  goaway(): { lastStreamId: number; code: number } | undefined {
    const f = this.frames.find((x) => x.type === FRAME.GOAWAY)
    return f && { lastStreamId: f.payload.readUInt32BE(0) & 0x7fffffff, code: f.payload.readUInt32BE(4) }
  }

  /** The RST_STREAM error code the server sent on `streamId`, if any. */
  reset(streamId: number): number | undefined {
    const f = this.frames.find((x) => x.type === FRAME.RST_STREAM && x.streamId === streamId)
    return f?.payload.readUInt32BE(0)
  }

  /** The DATA the server sent on `streamId`, as text. */
  data(streamId: number): string {
    const parts = this.frames.filter((x) => x.type === FRAME.DATA && x.streamId === streamId)
    return Buffer.concat(parts.map((x) => x.payload)).toString('utf8')
  }

  count(type: number): number {
    return this.frames.filter((x) => x.type === type).length
  }

  destroy(): void {
    this.#socket.destroy()
  }

  #read(chunk: Buffer): void {
    this.#buffer = Buffer.concat([this.#buffer, chunk])
    while (this.#buffer.length >= 9) {
      const length = this.#buffer.readUIntBE(0, 3)
      if (this.#buffer.length < 9 + length) return
      this.frames.push({
        type: this.#buffer[3] as number,
        flags: this.#buffer[4] as number,
        streamId: this.#buffer.readUInt32BE(5) & 0x7fffffff,
        payload: this.#buffer.subarray(9, 9 + length),
      })
      this.#buffer = this.#buffer.subarray(9 + length)
    }
  }
}
