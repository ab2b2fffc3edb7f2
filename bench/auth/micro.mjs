// In-process cost of validating the same token repeatedly: verified-token cache on vs off (medians of
// 7 interleaved rounds). Shows what the cache saves per request, independent of HTTP.
import { AuthService, MemoryRevocationStore, TokenService } from '../../packages/auth/dist/index.js'

const secret = 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyz'
const make = (verifiedCacheSize) => {
  const tokens = new TokenService({ secret, issuer: 'bench', verifiedCacheSize })
  return new AuthService({ tokens, revocation: new MemoryRevocationStore({ sweepIntervalMs: 0 }) })
}
const cached = make(10_000)
const uncached = make(0)
const user = {
  id: 1,
  username: 'bench',
  email: 'bench@example.com',
  roles: ['user'],
  permissions: ['a.read'],
}
const token = await cached.issueAccessToken(user)
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
async function run(service, n = 50_000) {
  const start = process.hrtime.bigint()
  for (let i = 0; i < n; i++) await service.authenticate(token)
  return Number(process.hrtime.bigint() - start) / 1e3 / n // µs per call
}
const a = []
const b = []
await run(cached, 5000)
await run(uncached, 5000)
for (let r = 0; r < 7; r++) {
  a.push(await run(cached))
  b.push(await run(uncached))
}
console.log('\nauth: authenticate(token) in process (7 rounds, medians)')
console.log('verified cache'.padEnd(40), `${median(a).toFixed(2)} µs`.padStart(10))
console.log(
  'no cache'.padEnd(40),
  `${median(b).toFixed(2)} µs`.padStart(10),
  `ratio ${(median(b) / median(a)).toFixed(1)}×`.padStart(22),
)
