// Strict base64 decoding. Node's decoder never fails: it skips characters outside the alphabet and
// ignores stray padding, so `Buffer.from('!!', 'base64')` is an empty buffer, not an error. A string is
// accepted only when re-encoding the decoded bytes gives back exactly the same text (canonical, padded).

/** Decodes standard padded base64, or returns undefined when `text` is not canonical base64. */
export function decodeBase64Strict(text: string): Buffer | undefined {
  if (typeof text !== 'string' || text.length === 0 || text.length % 4 !== 0) return undefined
  const bytes = Buffer.from(text, 'base64')
  return bytes.toString('base64') === text ? bytes : undefined
}
