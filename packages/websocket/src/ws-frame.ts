// The RFC 6455 header of the frames a server sends for one Trivium frame: final (FIN), binary
// (opcode 2), no RSV bits (no extension), unmasked (server to client). These are the bytes `ws` writes
// for `send(data, { binary: true })` on a connection without permessage-deflate; the carrier writes
// them itself so that one reply is one buffer and one socket write, without ws's per-message option
// objects and its separate header buffer (PROTOCOL.md "WebSocket": one binary message is one frame).

/** Bytes of the header in front of a payload of `size` bytes. */
export function wsHeaderSize(size: number): number {
  return size < 126 ? 2 : size < 65536 ? 4 : 10
}

/** Writes the header for a payload of `size` bytes at the start of `out`; returns its length. */
export function writeWsBinaryHeader(out: Uint8Array, size: number): number {
  out[0] = 0x82
  if (size < 126) {
    out[1] = size
    return 2
  }
  if (size < 65536) {
    out[1] = 126
    out[2] = size >>> 8
    out[3] = size & 0xff
    return 4
  }
  out[1] = 127
  // 64-bit length; payloads are bounded by maxPayload far below 2^53.
  const high = Math.floor(size / 0x1_0000_0000)
  const low = size >>> 0
  out[2] = high >>> 24
  out[3] = (high >>> 16) & 0xff
  out[4] = (high >>> 8) & 0xff
  out[5] = high & 0xff
  out[6] = low >>> 24
  out[7] = (low >>> 16) & 0xff
  out[8] = (low >>> 8) & 0xff
  out[9] = low & 0xff
  return 10
}
