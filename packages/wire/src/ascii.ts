// Short ASCII text without TextDecoder: most frame payloads, metadata values and bodies of small calls
// (`{}`, `{"id":42}`) are a few ASCII bytes, and a TextDecoder call costs more than the decoding. ASCII
// bytes are valid UTF-8 and decode to the same string (no BOM possible), so callers keep their own strict
// decoder, with its own BOM and error rules, for everything else.

/** Longest text decoded here; longer text goes to the caller's TextDecoder. */
export const SHORT_ASCII_BYTES = 64

// One reused array per length, filled and passed to String.fromCharCode.
const CODES: number[][] = Array.from({ length: SHORT_ASCII_BYTES + 1 }, (_, n) =>
  new Array<number>(n).fill(0),
)

/** `bytes[start, end)` as a string when they are at most 64 ASCII bytes, else undefined. */
export function shortAscii(bytes: Uint8Array, start = 0, end = bytes.length): string | undefined {
  const n = end - start
  const codes = CODES[n]
  if (codes === undefined) return undefined
  let or = 0
  for (let i = 0; i < n; i++) {
    const c = bytes[start + i] as number
    or |= c
    codes[i] = c
  }
  return or < 0x80 ? String.fromCharCode.apply(null, codes) : undefined
}
