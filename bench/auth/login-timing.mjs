// Login with an unknown username vs a wrong password: both must cost one bcrypt compare.
// Prints medians (ms) and their ratio; no server, inject only, PGlite in memory.
import { randomBytes } from 'node:crypto'
import trivium, { triviumFactoryOptions } from '@trivium/core'
import Fastify from 'fastify'
import triviumAuth from '../../packages/auth/dist/index.js'
import { SqlTokenLedger, SqlUserStore } from '../../packages/auth/dist/sql.js'
import { shutdownPasswordWorkers } from '../../packages/crypto/dist/index.js'
import { connectPglite } from '../../packages/sql/dist/index.js'

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[s.length >> 1]
}
const sql = await connectPglite()
const app = Fastify({ ...triviumFactoryOptions(), logger: false })
await app.register(trivium)
await app.register(triviumAuth, {
  secret: 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyz',
  issuer: 'bench',
  ledger: new SqlTokenLedger(sql),
  flows: { users: new SqlUserStore(sql), encryptionKey: randomBytes(32).toString('base64') },
})
await app.ready()
const password = 'Str0ng!Passw0rd'
await app.inject({
  method: 'POST',
  url: '/auth/register',
  payload: { username: 'alice', email: 'a@example.com', password },
})
const login = async (username, pw) => {
  const start = process.hrtime.bigint()
  const r = await app.inject({ method: 'POST', url: '/auth/login', payload: { username, password: pw } })
  if (r.statusCode !== 401) throw new Error(`expected 401, got ${r.statusCode}`)
  return Number(process.hrtime.bigint() - start) / 1e6
}
await login('nobody', password) // warm-up (the dummy hash)
const rounds = Number(process.env.BENCH_LOGIN_ROUNDS ?? 9)
const unknown = []
const wrong = []
for (let i = 0; i < rounds; i++) {
  unknown.push(await login('nobody', password))
  wrong.push(await login('alice', 'Wrong!Passw0rd'))
}
const u = median(unknown)
const w = median(wrong)
console.log(`\nauth: login failure timing (${rounds} interleaved rounds, medians)`)
console.log('unknown username'.padEnd(40), `${u.toFixed(1)} ms`.padStart(10))
console.log(
  'wrong password'.padEnd(40),
  `${w.toFixed(1)} ms`.padStart(10),
  `ratio ${(u / w).toFixed(2)}`.padStart(22),
)
await app.close()
await sql.close()
await shutdownPasswordWorkers()
