// The demo tests' remembered bcrypt (scripts/ts/bcrypt-memo.mjs): a repeat is the same real cost-12 answer,
// a wrong password is still refused, and with the memo off every hash has its own salt again.
import { hashPassword, shutdownPasswordWorkers, verifyPassword } from '@trivium/crypto'
import t from 'tap'
import './bcrypt-memo.js'

const PASSWORD = 'Str0ng!Passw0rd'
const COST_12 = /^\$2b\$12\$[./A-Za-z0-9]{53}$/

t.teardown(shutdownPasswordWorkers)

t.test('on: the same password gives the same cost-12 hash, and verifies answer as bcrypt does', async (t) => {
  t.equal(process.env.TRIVIUM_TEST_BCRYPT_MEMO, '1', 'the demo test helpers turn it on')
  const first = await hashPassword(PASSWORD)
  t.match(first, COST_12)
  t.equal(await hashPassword(PASSWORD), first, 'a repeat is the remembered hash')
  t.equal(await verifyPassword(PASSWORD, first), true)
  t.equal(await verifyPassword('Wr0ng!Passw0rd', first), false, 'a wrong password is refused')
  t.equal(await verifyPassword(PASSWORD, first), true, 'a repeated verify is still right')
})

t.test('off: every hash is computed, with its own salt', async (t) => {
  process.env.TRIVIUM_TEST_BCRYPT_MEMO = '0'
  await shutdownPasswordWorkers() // the next workers copy the environment as it is now
  const a = await hashPassword(PASSWORD)
  const b = await hashPassword(PASSWORD)
  t.match(a, COST_12)
  t.not(a, b, 'two salts')
  t.equal(await verifyPassword(PASSWORD, b), true)
  t.equal(await verifyPassword('Wr0ng!Passw0rd', b), false)
})
