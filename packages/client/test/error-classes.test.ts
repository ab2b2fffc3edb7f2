// Issue 43 item 1: the error classes have one home, @trivium/wire/error-classes, and every entry that offers them
// re-exports that module whole, so a class added there (with its row in ERROR_KINDS) reaches the server's and the
// client's entries without another list to edit. The same objects everywhere, so `instanceof` holds across them.
import * as client from '@trivium/client'
import * as clientNode from '@trivium/client/node'
import * as core from '@trivium/core'
import * as wire from '@trivium/wire'
import * as classes from '@trivium/wire/error-classes'
import * as vocabulary from '@trivium/wire/errors'
import t from 'tap'

const entries = {
  '@trivium/wire': wire,
  '@trivium/wire/errors': vocabulary,
  '@trivium/core': core,
  '@trivium/client': client,
  '@trivium/client/node': clientNode,
} as Record<string, Record<string, unknown>>

t.test('every entry offering the error classes exports each one, the same object', async (t) => {
  const names = Object.keys(classes)
  t.ok(names.length >= 17, `${names.length} names`)
  for (const [entry, exported] of Object.entries(entries)) {
    for (const name of names)
      t.equal(exported[name], (classes as Record<string, unknown>)[name], `${entry}: ${name}`)
  }
})

t.test(
  'each kind of ERROR_KINDS has its class, with its code and status, rebuilt from its body',
  async (t) => {
    for (const [kind, { code, status }] of Object.entries(vocabulary.ERROR_KINDS)) {
      const Class = (classes as Record<string, unknown>)[kind] as new (
        ...args: unknown[]
      ) => classes.TriviumError
      t.type(Class, 'function', `${kind} is exported from @trivium/wire/error-classes`)
      const error = kind === 'RateLimitExceededException' ? new Class(3, 'slow down') : new Class('message')
      t.match(error, { name: kind, code, statusCode: status, kind }, kind)
      const rebuilt = vocabulary.fromErrorBody(vocabulary.toErrorBody(error))
      t.ok(rebuilt instanceof Class, `${kind}: fromErrorBody gives the class back`)
      t.same(vocabulary.toErrorBody(rebuilt), vocabulary.toErrorBody(error))
    }
  },
)
