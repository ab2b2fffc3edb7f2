// The PostgreSQL frontend/backend messages the PGlite fast path exchanges with the WASM engine, encoded
// and decoded here instead of through PGlite's general-purpose protocol classes: one query is one
// exchange (Bind + Execute + Sync on a prepared statement) whose answer is read in one pass.

/** Frontend messages, appended into one growing buffer and sent as one exchange. */
export class MessageWriter {
  private buf = Buffer.allocUnsafe(1024)
  private pos = 0

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n))
    this.buf.copy(next, 0, 0, this.pos)
    this.buf = next
  }

  private byte(b: number): void {
    this.ensure(1)
    this.buf[this.pos++] = b
  }

  private int16(n: number): void {
    this.ensure(2)
    this.buf.writeInt16BE(n, this.pos)
    this.pos += 2
  }

  private int32(n: number): void {
    this.ensure(4)
    this.buf.writeInt32BE(n, this.pos)
    this.pos += 4
  }

  private cstring(s: string): void {
    this.ensure(Buffer.byteLength(s) + 1)
    this.pos += this.buf.write(s, this.pos, 'utf8')
    this.buf[this.pos++] = 0
  }

  /** Starts a message: its type byte and a length placeholder; `end` fills the length in. */
  private begin(type: number): number {
    this.byte(type)
    const at = this.pos
    this.int32(0)
    return at
  }

  private end(at: number): void {
    this.buf.writeInt32BE(this.pos - at, at)
  }

  /** Parse: a named statement, parameter types left to the server (as PGlite's own `query`). */
  parse(name: string, text: string): this {
    const at = this.begin(0x50) // P
    this.cstring(name)
    this.cstring(text)
    this.int16(0)
    this.end(at)
    return this
  }

  describeStatement(name: string): this {
    const at = this.begin(0x44) // D
    this.byte(0x53) // S
    this.cstring(name)
    this.end(at)
    return this
  }

  closeStatement(name: string): this {
    const at = this.begin(0x43) // C
    this.byte(0x53) // S
    this.cstring(name)
    this.end(at)
    return this
  }

  /**
   * Bind on the unnamed portal. Values are strings (text format), bytes (binary format, as PGlite
   * sends a Uint8Array/ArrayBuffer) or null; results all in text format.
   */
  bind(statement: string, values: readonly (string | Uint8Array | null)[]): this {
    const at = this.begin(0x42) // B
    this.byte(0) // unnamed portal
    this.cstring(statement)
    this.int16(values.length)
    for (const v of values) this.int16(v instanceof Uint8Array ? 1 : 0)
    this.int16(values.length)
    for (const v of values) {
      if (v === null) {
        this.int32(-1)
      } else if (v instanceof Uint8Array) {
        this.int32(v.byteLength)
        this.ensure(v.byteLength)
        this.buf.set(v, this.pos)
        this.pos += v.byteLength
      } else {
        const n = Buffer.byteLength(v)
        this.int32(n)
        this.ensure(n)
        this.pos += this.buf.write(v, this.pos, 'utf8')
      }
    }
    this.int16(0) // all results in text
    this.end(at)
    return this
  }

  execute(): this {
    const at = this.begin(0x45) // E
    this.byte(0) // unnamed portal
    this.int32(0) // all rows
    this.end(at)
    return this
  }

  /** A simple-protocol Query (several statements, no parameters). */
  query(text: string): this {
    const at = this.begin(0x51) // Q
    this.cstring(text)
    this.end(at)
    return this
  }

  sync(): this {
    const at = this.begin(0x53) // S
    this.end(at)
    return this
  }

  /** The messages written so far (a view, valid until the next write), and resets the writer. */
  take(): Uint8Array {
    const out = this.buf.subarray(0, this.pos)
    this.pos = 0
    return out
  }
}

/** One column of a row description. */
export interface FieldInfo {
  name: string
  typeId: number
}

/** The fields of an ErrorResponse, by their one-letter codes. */
export type ErrorFields = Record<string, string>

/** What one exchange answered, read in one pass over the backend messages. */
export interface ExchangeResult {
  /** From ParameterDescription (statement describe). */
  paramTypes?: number[]
  /** From RowDescription; null after NoData. */
  fields?: FieldInfo[] | null
  /** DataRow values, as text (null for SQL NULL). */
  rows: (string | null)[][]
  /** CommandComplete tags, in order. */
  tags: string[]
  /** The first ErrorResponse, if any, and its message length. */
  error?: ErrorFields
  errorLength?: number
  /** ReadyForQuery's status: I (idle), T (in transaction), E (failed transaction); absent = no answer. */
  status?: string
}

// One reader per backend message the exchange keeps: `body` is where the message's content starts (after
// its type byte and length), `next` where the following message starts.

/** D: DataRow, its values as text (null for SQL NULL). */
function dataRow(buf: Buffer, body: number): (string | null)[] {
  const n = buf.readInt16BE(body)
  const row: (string | null)[] = new Array(n)
  let p = body + 2
  for (let i = 0; i < n; i++) {
    const len = buf.readInt32BE(p)
    p += 4
    if (len < 0) {
      row[i] = null
    } else {
      row[i] = buf.toString('utf8', p, p + len)
      p += len
    }
  }
  return row
}

/** T: RowDescription, each column's name and type. */
function rowDescription(buf: Buffer, body: number): FieldInfo[] {
  const n = buf.readInt16BE(body)
  const fields: FieldInfo[] = new Array(n)
  let p = body + 2
  for (let i = 0; i < n; i++) {
    const z = buf.indexOf(0, p)
    const name = buf.toString('utf8', p, z)
    p = z + 1
    const typeId = buf.readUInt32BE(p + 6)
    p += 18 // table oid 4, column 2, type oid 4, type size 2, modifier 4, format 2
    fields[i] = { name, typeId }
  }
  return fields
}

/** t: ParameterDescription, each parameter's type. */
function parameterDescription(buf: Buffer, body: number): number[] {
  const n = buf.readInt16BE(body)
  const types: number[] = new Array(n)
  for (let i = 0; i < n; i++) types[i] = buf.readUInt32BE(body + 2 + 4 * i)
  return types
}

/** E: ErrorResponse, its fields by their one-letter codes. */
function errorResponse(buf: Buffer, body: number, next: number): ErrorFields {
  const fields: ErrorFields = {}
  let p = body
  while (p < next && buf[p] !== 0) {
    const code = String.fromCharCode(buf[p] as number)
    const z = buf.indexOf(0, p + 1)
    fields[code] = buf.toString('utf8', p + 1, z)
    p = z + 1
  }
  return fields
}

/** Decodes the raw backend bytes of one exchange. */
export class ResponseReader {
  /** Decodes what the exchange answered (`bytes` read in place; nothing returned refers to them). */
  read(bytes: Uint8Array): ExchangeResult {
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    const end = bytes.byteLength
    const out: ExchangeResult = { rows: [], tags: [] }
    let pos = 0
    while (pos + 5 <= end) {
      const type = buf[pos] as number
      const length = buf.readInt32BE(pos + 1)
      const body = pos + 5
      const next = pos + 1 + length
      switch (type) {
        case 0x44: // D: DataRow
          out.rows.push(dataRow(buf, body))
          break
        case 0x43: // C: CommandComplete
          out.tags.push(buf.toString('utf8', body, next - 1))
          break
        case 0x54: // T: RowDescription
          out.fields = rowDescription(buf, body)
          break
        case 0x6e: // n: NoData
          out.fields = null
          break
        case 0x74: // t: ParameterDescription
          out.paramTypes = parameterDescription(buf, body)
          break
        case 0x45: // E: ErrorResponse (the first one is kept)
          if (out.error === undefined) {
            out.error = errorResponse(buf, body, next)
            out.errorLength = length
          }
          break
        case 0x5a: // Z: ReadyForQuery
          out.status = String.fromCharCode(buf[body] as number)
          break
        // 1 ParseComplete, 2 BindComplete, 3 CloseComplete, I EmptyQuery, s PortalSuspended,
        // N Notice, S ParameterStatus, A Notification: nothing to keep.
      }
      pos = next
    }
    return out
  }
}
