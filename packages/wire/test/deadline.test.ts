// PROTOCOL.md "Deadlines": the one parser of a call's timeout, and the section's byte examples as the
// encoders write them.
import { readFileSync } from 'node:fs'
import {
  encodeMetadata,
  encodeTcpFrame,
  encodeWsFrame,
  FrameType,
  invalidTimeoutMessage,
  MAX_TIMEOUT_MS,
  parseTimeoutMs,
  TIMEOUT_HEADER,
  TIMEOUT_METADATA_KEY,
} from '@trivium/wire'
import t from 'tap'

t.test('parseTimeoutMs: 1 to 10 digits, 1 … 2^31 - 1', async (t) => {
  t.equal(MAX_TIMEOUT_MS, 2 ** 31 - 1)
  t.equal(parseTimeoutMs('1'), 1)
  t.equal(parseTimeoutMs('200'), 200)
  t.equal(parseTimeoutMs('0200'), 200)
  t.equal(parseTimeoutMs('2147483647'), 2147483647)
  for (const bad of [
    '0',
    '0000',
    '',
    ' 1',
    '1 ',
    '-1',
    '+1',
    '1.5',
    '1e3',
    '0x10',
    'abc',
    '100, 200',
    '2147483648',
    '9007199254740992',
    '99999999999',
  ]) {
    t.equal(parseTimeoutMs(bad), undefined, JSON.stringify(bad))
  }
  t.equal(
    invalidTimeoutMessage('header'),
    `Invalid ${TIMEOUT_HEADER} header: must be a positive integer number of milliseconds, at most 2147483647`,
  )
  t.equal(
    invalidTimeoutMessage('metadata'),
    `Invalid ${TIMEOUT_METADATA_KEY} metadata: must be a positive integer number of milliseconds, at most 2147483647`,
  )
})

t.test("PROTOCOL.md's deadline examples are the encoders' bytes", async (t) => {
  const doc = readFileSync(new URL('../../../PROTOCOL.md', import.meta.url), 'utf8')
  const section = doc.slice(doc.indexOf('## Deadlines'), doc.indexOf('## Idempotency keys'))
  const hex = (b: Uint8Array) =>
    Buffer.from(b)
      .toString('hex')
      .replace(/(..)(?!$)/g, '$1 ')
  const meta = encodeMetadata({ timeout_ms: '200' })
  const frame = { type: FrameType.REQUEST, requestId: 1, endpoint: 'ping', payload: meta }
  t.ok(
    section.includes(
      `\`${hex(meta).replace('01 00 00 00 0a', '01 00 00 00 | 0a').replace('73 03', '73 | 03')}\``,
    ),
    'metadata',
  )
  t.ok(
    section.includes(`| TCP REQUEST id 1 to \`ping\`, timeout 200 ms | \`${hex(encodeTcpFrame(frame))}\` |`),
    'TCP',
  )
  t.ok(section.includes(`(\`metadata=1\`) | \`${hex(encodeWsFrame(frame))}\` |`), 'WebSocket')
  const body =
    '{"statusCode":504,"code":"TRV_TIMEOUT","error":"TimeoutException","message":"Deadline of 200 ms exceeded","requestId":"t1:1"}'
  const error = encodeTcpFrame({
    type: FrameType.ERROR,
    requestId: 1,
    payload: new TextEncoder().encode(body),
  })
  t.ok(section.includes(`\`${hex(error.subarray(0, 9))}\` + \`${body}\``), 'TCP ERROR header')
})
