// Issue 29 item 2: a client cannot write error-level logs. What a client does wrong — a request the
// parser gives up on, an upload it aborts, a body too large, not UTF-8, not JSON, a Content-Type no
// endpoint reads — is logged once, at info (30), with its reason and no stack; only a server fault is
// logged at error (50), as `unhandled error in endpoint` with its stack. Real sockets, real log lines.
import net, { type AddressInfo } from 'node:net'
import trivium, { jsonSchemaModel, triviumFactoryOptions, ValidationException } from '@trivium/core'
import Fastify from 'fastify'
import type { Test } from 'tap'
import t from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'

type Line = Record<string, unknown> & { level: number; msg: string }

const Echo = jsonSchemaModel<{ text: string }>('Echo', {
  type: 'object',
  properties: { text: { type: 'string' } },
  required: ['text'],
})

async function app(t: Test) {
  const lines: Line[] = []
  const fastify = Fastify({
    ...triviumFactoryOptions(),
    logger: { level: 'info', stream: { write: (l: string) => lines.push(JSON.parse(l)) } },
  })
  await fastify.register(trivium, { bodyLimit: 1024 })
  fastify.trivium.endpoint('echo', { method: 'POST', url: '/echo', request: Echo }, (req) => {
    if (req.text === 'boom') throw new Error('boom')
    if (req.text === 'invalid')
      throw new ValidationException('Text is invalid', [{ field: 'text', message: 'is invalid' }])
    return req
  })
  fastify.get('/marker', async () => ({ ok: true }))
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => fastify.close())
  const port = (fastify.server.address() as AddressInfo).port

  /** Sends `parts`, ends or resets, and returns the log lines the request caused (Fastify's own left out). */
  async function faultLines(parts: string[], finish: 'end' | 'reset' = 'end'): Promise<Line[]> {
    lines.length = 0
    await new Promise<void>((resolve) => {
      const socket = net.connect(port, '127.0.0.1')
      socket.on('error', () => {})
      socket.on('close', () => resolve())
      socket.resume() // read the answer to its end, or the socket never closes
      socket.once('connect', async () => {
        for (const p of parts) {
          socket.write(Buffer.from(p, 'latin1'))
          await new Promise((r) => setImmediate(r))
        }
        if (finish === 'reset') {
          // The server must have read the headers before the reset, or there is no request to abort.
          const deadline = Date.now() + waitBound(10_000)
          while (!lines.some((l) => l.msg === 'incoming request') && Date.now() < deadline)
            await new Promise((r) => setTimeout(r, 5))
          socket.resetAndDestroy()
        } else socket.end()
      })
    })
    // Whatever the request logs is logged before a later request completes on a new connection.
    const deadline = Date.now() + waitBound(10_000)
    let marker = false
    while (!marker && Date.now() < deadline) {
      await fetch(`http://127.0.0.1:${port}/marker`).then((r) => r.text())
      marker = lines.some(
        (l) => l.msg === 'request completed' && (l.res as { statusCode?: number })?.statusCode === 200,
      )
      await new Promise((r) => setTimeout(r, 10))
    }
    return lines.filter((l) => l.msg !== 'incoming request' && l.msg !== 'request completed')
  }
  return { faultLines }
}

const head = (headers: string) =>
  `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}\r\n`

/** The lines without `time`/`pid`/`hostname`/`reqId`; `requestId` checked for its form and left out. */
function strip(t: Test, lines: Line[]): Record<string, unknown>[] {
  return lines.map(({ time: _t, pid: _p, hostname: _h, reqId: _r, requestId, ...rest }) => {
    t.match(requestId, /^req-/, 'the line names the request id')
    return rest
  })
}

const refused = (message: string, statusCode: number, code: string, reason?: string) => ({
  level: 30,
  msg: `request refused: ${message}`,
  statusCode,
  code,
  ...(reason ? { reason } : {}),
})

t.test('client faults: one info line each, with the reason, no stack; a server fault: error', async (t) => {
  const { faultLines } = await app(t)
  const cases: [string, string[], 'end' | 'reset', Record<string, unknown>[]][] = [
    [
      'Transfer-Encoding: xchunked (the parser gives up mid-body)',
      [head('Transfer-Encoding: xchunked\r\n'), '{"text":"a"}'],
      'end',
      [refused('Malformed HTTP request', 400, 'TRV_VALIDATION', 'HPE_INVALID_TRANSFER_ENCODING')],
    ],
    [
      'an upload aborted (RST) after half its body',
      [head('Content-Length: 100\r\n'), '{"text":"a'],
      'reset',
      [{ level: 30, msg: 'request aborted by the client' }],
    ],
    [
      'an upload ended (FIN) after half its body: the parser answers, the abort is not logged again',
      [head('Content-Length: 100\r\n'), '{"text":"a'],
      'end',
      [refused('Malformed HTTP request', 400, 'TRV_VALIDATION', 'HPE_INVALID_EOF_STATE')],
    ],
    [
      'Content-Length over the body limit',
      [head('Content-Length: 5000\r\n'), '{"text":"a'],
      'end',
      [refused('Request body is too large', 413, 'TRV_PAYLOAD_TOO_LARGE')],
    ],
    [
      'a chunked body over the limit',
      [
        head('Transfer-Encoding: chunked\r\n'),
        `800\r\n${'a'.repeat(2048)}\r\n`,
        `800\r\n${'a'.repeat(2048)}\r\n0\r\n\r\n`,
      ],
      'end',
      [refused('Request body is too large', 413, 'TRV_PAYLOAD_TOO_LARGE')],
    ],
    [
      'invalid UTF-8',
      [head('Content-Length: 13\r\n'), '{"text":"\xff"}'],
      'end',
      [refused('Request body is not valid UTF-8', 400, 'TRV_VALIDATION')],
    ],
    [
      'invalid JSON',
      [head('Content-Length: 9\r\n'), '{"text":}'],
      'end',
      [refused('Request body is not valid JSON', 400, 'TRV_VALIDATION')],
    ],
    [
      'a Content-Type the endpoint does not read',
      ['POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi'],
      'end',
      [refused('Unsupported Content-Type', 415, 'TRV_UNSUPPORTED_MEDIA_TYPE')],
    ],
    [
      "a refusal inside the endpoint (the application's access log has it)",
      [head('Content-Length: 18\r\n'), '{"text":"invalid"}'],
      'end',
      [],
    ],
  ]
  for (const [name, parts, finish, expected] of cases) {
    const lines = await faultLines(parts, finish)
    t.same(strip(t, lines), expected, name)
    t.notOk(
      lines.some((l) => l.level >= 40 || 'err' in l || 'stack' in l),
      `${name}: nothing above info, no stack`,
    )
  }

  const fault = await faultLines([head('Content-Length: 15\r\n'), '{"text":"boom"}'])
  t.same(
    fault.map((l) => [l.level, l.msg]),
    [[50, 'unhandled error in endpoint']],
    'a server fault is logged at error',
  )
  t.match((fault[0]?.err as { stack?: string })?.stack, /^Error: boom\n\s+at /, 'with its stack')
})
