// A Server-Sent Events reader over a fetch body (WHATWG "event stream" parsing: fields id, event,
// data; lines end in LF, CRLF or CR; a blank line dispatches).

export interface SseEvent {
  event: string
  data: string
  id: string | undefined
}

export async function* readEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = body.getReader()
  const decoder = new TextDecoder('utf-8')
  let buffer = ''
  let event = ''
  let data: string[] = []
  let id: string | undefined
  let sawCr = false
  try {
    while (true) {
      const { value, done } = await reader.read()
      if (done) return
      buffer += decoder.decode(value, { stream: true })
      let start = 0
      for (let i = 0; i < buffer.length; i++) {
        const ch = buffer.charCodeAt(i)
        if (ch !== 10 && ch !== 13) continue
        if (ch === 10 && sawCr && i === start) {
          // the LF of a CRLF split across two checks
          sawCr = false
          start = i + 1
          continue
        }
        sawCr = ch === 13
        const line = buffer.slice(start, i)
        start = i + 1
        if (ch === 13 && buffer.charCodeAt(i + 1) === 10) {
          i++
          start = i + 1
          sawCr = false
        }
        if (line === '') {
          if (data.length > 0 || event !== '') yield { event: event || 'message', data: data.join('\n'), id }
          event = ''
          data = []
          continue
        }
        if (line.startsWith(':')) continue
        const colon = line.indexOf(':')
        const field = colon === -1 ? line : line.slice(0, colon)
        let val = colon === -1 ? '' : line.slice(colon + 1)
        if (val.startsWith(' ')) val = val.slice(1)
        if (field === 'event') event = val
        else if (field === 'data') data.push(val)
        else if (field === 'id') id = val
      }
      buffer = buffer.slice(start)
    }
  } finally {
    reader.cancel().catch(() => {})
  }
}
