// A connection's logger is `parent.child({ connection: id })`, made at its first written line
// (bench/density): every line, level and method is the child's, and a line at a level the parent does
// not write makes nothing.
import { connectionLogger, ownLogger } from '@trivium/frame-session'
import Fastify, { type FastifyBaseLogger } from 'fastify'
import t from 'tap'

function setup(level: string) {
  const lines: Record<string, unknown>[] = []
  let children = 0
  const root = Fastify({
    logger: {
      level,
      base: undefined,
      timestamp: false,
      onChild: () => {
        children++
      },
      stream: { write: (line: string) => lines.push(JSON.parse(line)) },
    },
  }).log
  const parent = root.child({ reqId: 'req-1' })
  children = 0
  return { lines, parent, made: () => children }
}

t.test('a line at a level not written makes no child; the first written line does', async (t) => {
  const { lines, parent, made } = setup('warn')
  const log = connectionLogger(parent, 'w1')
  log.info({ a: 1 }, 'not written')
  log.debug('nor this')
  t.equal(made(), 0, 'no child yet')
  t.same(lines, [])
  log.warn({ b: 2 }, 'written')
  t.equal(made(), 1, 'the child, made once')
  log.error('again')
  t.equal(made(), 1)
  t.same(lines, [
    { level: 40, reqId: 'req-1', connection: 'w1', b: 2, msg: 'written' },
    { level: 50, reqId: 'req-1', connection: 'w1', msg: 'again' },
  ])
})

t.test("the child's level is its parent's, read when a line is written", async (t) => {
  const { lines, parent, made } = setup('warn')
  const log = connectionLogger(parent, 'w2')
  parent.level = 'debug'
  log.debug('now written')
  t.equal(made(), 1)
  t.equal(log.level, 'debug')
  log.level = 'error'
  log.warn('below the child’s own level')
  t.equal(parent.level, 'debug', "setting the child's level leaves the parent's")
  t.same(lines, [{ level: 20, reqId: 'req-1', connection: 'w2', msg: 'now written' }])
})

t.test('anything but a line makes the child: child(), bindings(), fields', async (t) => {
  const { lines, parent, made } = setup('info')
  const log = connectionLogger(parent, 'w3') as FastifyBaseLogger & { bindings(): object }
  t.same(log.bindings(), { reqId: 'req-1', connection: 'w3' })
  t.equal(made(), 1)
  const grandchild = log.child({ call: 7 })
  grandchild.info('from a call')
  t.equal(typeof log.info, 'function')
  t.equal(log.info, log.info, 'the same method each time')
  t.ok('warn' in log)
  t.same(lines, [{ level: 30, reqId: 'req-1', connection: 'w3', call: 7, msg: 'from a call' }])
})

t.test('a parent without isLevelEnabled: the child is made at the first use', async (t) => {
  const written: unknown[][] = []
  const made: unknown[] = []
  const make = (bindings: unknown): FastifyBaseLogger => {
    const logger = {
      level: 'info',
      fatal: (...a: unknown[]) => written.push([bindings, 'fatal', ...a]),
      error: (...a: unknown[]) => written.push([bindings, 'error', ...a]),
      warn: (...a: unknown[]) => written.push([bindings, 'warn', ...a]),
      info: (...a: unknown[]) => written.push([bindings, 'info', ...a]),
      debug: (...a: unknown[]) => written.push([bindings, 'debug', ...a]),
      trace: (...a: unknown[]) => written.push([bindings, 'trace', ...a]),
      silent: () => {},
      child: (b: unknown) => {
        made.push(b)
        return make(b)
      },
    }
    return logger as FastifyBaseLogger
  }
  const log = connectionLogger(make('parent'), 'w4')
  t.same(made, [])
  log.debug('x')
  t.same(made, [{ connection: 'w4' }])
  t.same(written, [[{ connection: 'w4' }, 'debug', 'x']])
})

t.test("ownLogger: the owner's log becomes the child once it is made", async (t) => {
  const { lines, parent, made } = setup('warn')
  const log = connectionLogger(parent, 'w5')
  const owner = { log }
  ownLogger(log, owner)
  owner.log.info('not written')
  t.equal(owner.log, log, 'still the connection logger')
  owner.log.warn('first')
  t.equal(made(), 1)
  t.not(owner.log, log, 'now the child itself')
  owner.log.warn('second')
  log.warn('through the proxy')
  t.equal(made(), 1)
  const late = { log }
  ownLogger(log, late)
  t.equal(late.log, owner.log, 'an owner set after the child was made gets it at once')
  const plain = { log: parent }
  ownLogger(parent, plain)
  t.equal(plain.log, parent, 'any other logger: nothing')
  t.same(
    lines.map((l) => [l.connection, l.msg]),
    [
      ['w5', 'first'],
      ['w5', 'second'],
      ['w5', 'through the proxy'],
    ],
  )
})
