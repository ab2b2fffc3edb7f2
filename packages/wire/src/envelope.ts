// The envelopes of a stream of requests over HTTP/2 (PROTOCOL.md "Client and bidirectional streams", "Over
// HTTP/2"): each item is 1 flags byte + a 4-byte big-endian length + the item's bytes, as Connect's streaming
// protocol frames its messages. Items carry flags 0x00; the server's last envelope of a bidirectional
// stream carries 0x02 (end of stream) with `{}` or `{"error": <error body>}`. Shared by server and client.

/** Flags of an item envelope. */
export const ENVELOPE_ITEM = 0x00
/** Flags of the end-of-stream envelope (server → client only). */
export const ENVELOPE_END = 0x02
/** Flags byte + length. */
export const ENVELOPE_HEADER_BYTES = 5
/** The media type of a stream of envelopes, by format name: `application/trivium-stream+json`. */
export const STREAM_CONTENT_TYPE_PREFIX = 'application/trivium-stream+'

/** One item (or the end) in its envelope. */
export function encodeEnvelope(flags: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(ENVELOPE_HEADER_BYTES + payload.length)
  out[0] = flags
  new DataView(out.buffer).setUint32(1, payload.length)
  out.set(payload, ENVELOPE_HEADER_BYTES)
  return out
}

/** Why a stream of envelopes is refused; `tooLarge` is the item size limit, anything else a malformed stream. */
export class EnvelopeError extends Error {
  constructor(
    message: string,
    readonly tooLarge: boolean,
  ) {
    super(message)
    this.name = 'EnvelopeError'
  }
}

/**
 * Splits a byte stream into envelopes as chunks arrive. An envelope may span chunks; at most one
 * item (`maxItemBytes`) plus one chunk is held. A length past the limit is refused as soon as its
 * header is read, before its bytes arrive.
 */
export class EnvelopeReader {
  #header = new Uint8Array(ENVELOPE_HEADER_BYTES)
  #headerFill = 0
  #flags = 0
  #item: Uint8Array | undefined
  #itemFill = 0

  constructor(
    private readonly maxItemBytes: number,
    /** The flags this side may receive (a server: items only). */
    private readonly allowed: readonly number[] = [ENVELOPE_ITEM],
  ) {}

  /** The envelopes completed by `chunk`, in order; throws EnvelopeError on a malformed or oversized one. */
  push(chunk: Uint8Array): { flags: number; payload: Uint8Array }[] {
    const out: { flags: number; payload: Uint8Array }[] = []
    let at = 0
    while (at < chunk.length) {
      if (this.#item === undefined) {
        const take = Math.min(ENVELOPE_HEADER_BYTES - this.#headerFill, chunk.length - at)
        this.#header.set(chunk.subarray(at, at + take), this.#headerFill)
        this.#headerFill += take
        at += take
        if (this.#headerFill < ENVELOPE_HEADER_BYTES) break
        this.#startItem(out)
        continue
      }
      const take = Math.min(this.#item.length - this.#itemFill, chunk.length - at)
      this.#item.set(chunk.subarray(at, at + take), this.#itemFill)
      this.#itemFill += take
      at += take
      if (this.#itemFill === this.#item.length) this.#finishItem(out)
    }
    return out
  }

  /** The stream ended: throws when it ended inside an envelope. */
  end(): void {
    if (this.#item !== undefined) {
      throw new EnvelopeError(
        `Malformed stream envelope: the body ended inside an item (${this.#itemFill} of ${this.#item.length} bytes)`,
        false,
      )
    }
    if (this.#headerFill > 0) {
      throw new EnvelopeError(
        `Malformed stream envelope: the body ended inside an envelope header (${this.#headerFill} of ${ENVELOPE_HEADER_BYTES} bytes)`,
        false,
      )
    }
  }

  #startItem(out: { flags: number; payload: Uint8Array }[]): void {
    const flags = this.#header[0] as number
    const length = new DataView(this.#header.buffer).getUint32(1)
    this.#headerFill = 0
    if (!this.allowed.includes(flags)) {
      const expected = this.allowed.map(hex).join(' or ')
      throw new EnvelopeError(`Malformed stream envelope: flags ${hex(flags)} (expected ${expected})`, false)
    }
    if (length > this.maxItemBytes) {
      throw new EnvelopeError(
        `Stream item of ${length} bytes is larger than the limit of ${this.maxItemBytes} bytes`,
        true,
      )
    }
    this.#flags = flags
    this.#item = new Uint8Array(length)
    this.#itemFill = 0
    if (length === 0) this.#finishItem(out)
  }

  #finishItem(out: { flags: number; payload: Uint8Array }[]): void {
    out.push({ flags: this.#flags, payload: this.#item as Uint8Array })
    this.#item = undefined
    this.#itemFill = 0
  }
}

function hex(flags: number): string {
  return `0x${flags.toString(16).padStart(2, '0')}`
}
