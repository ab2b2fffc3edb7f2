// Importing @trivium/auth evaluates neither ajv (its flow endpoints' request models are compiled when
// the flows are registered), nor otplib (loaded by @trivium/crypto on the first TOTP use), nor fast-jwt
// (loaded when the first TokenService is built): a cold import
// costs what the process needs, not what it may need later (bench/README.md, "cold import").
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const authEntry = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const cryptoEntry = fileURLToPath(new URL('../../crypto/dist/index.js', import.meta.url))

/** The dependencies among ajv, otplib and fast-jwt loaded after importing auth and running `steps`. */
function loadedAfter(steps: string): string[] {
  const script = `
    import { createRequire } from 'node:module'
    const auth = await import(${JSON.stringify(authEntry)})
    const crypto = await import(${JSON.stringify(cryptoEntry)})
    ${steps}
    const files = Object.keys(createRequire(import.meta.url).cache)
    console.log(JSON.stringify(['ajv', 'otplib', 'fast-jwt'].filter((name) => files.some((f) => f.includes('/' + name + '/')))))
  `
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })
  return JSON.parse(out.trim())
}

t.test('importing auth loads neither ajv, otplib nor fast-jwt', async (t) => {
  t.same(loadedAfter(''), [])
})

t.test('the first TOTP use loads otplib, and its codes verify', async (t) => {
  t.same(
    loadedAfter(`
      const secret = crypto.totp.generateSecret()
      const code = crypto.totp.generate(secret, { at: 1_000_000 })
      if (!crypto.totp.verify(code, secret, { at: 1_000_000 })) throw new Error('code refused')
      if (crypto.totp.verify('000000', 'A'.repeat(32), { at: 1_000_000 }) !== (crypto.totp.generate('A'.repeat(32), { at: 1_000_000 }) === '000000')) throw new Error('wrong answer')
    `),
    ['otplib'],
  )
})

t.test('the first TokenService loads fast-jwt, and its tokens verify', async (t) => {
  t.same(
    loadedAfter(`
      const tokens = new auth.TokenService({ secret: 'k'.repeat(32), issuer: 'loading-test' })
      const token = tokens.issueAccessToken({ userId: 7, username: 'u', email: 'u@example.com' })
      if (tokens.validate(token).isValid !== true) throw new Error('token refused')
    `),
    ['fast-jwt'],
  )
})
