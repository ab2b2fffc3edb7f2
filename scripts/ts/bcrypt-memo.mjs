// Test-only stand-in for bcryptjs in @trivium/crypto's password worker (scripts/ts/hooks.mjs puts it there,
// in the test files' processes and their threads). With TRIVIUM_TEST_BCRYPT_MEMO=1 in the environment
// (apps/demo/test/bcrypt-memo.ts sets it), each result of the real bcryptjs is kept on disk, per machine,
// and given again for the same input: a hash for the same password and cost, a verify's true/false for the
// same password and hash. Every answer is still the real one at the real cost (12); only repeats are not
// recomputed. Why: the demo's tests register and log in with a handful of passwords, and each cost-12 hash
// or verify is ~0.45 s of CPU in pure JS, over half of such a file's CPU. What changes: users with the same
// password share a salt, and a repeat is fast. Tests about bcrypt (packages/crypto, packages/auth) and demo
// tests that watch its duration run without it; without the variable every call goes straight to bcryptjs.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const realUrl = new URL(import.meta.url).searchParams.get('real')
const { default: bcrypt } = await import(realUrl)
/** Keyed by the bcryptjs file too: another version computes its own. */
const DIR = join(tmpdir(), `trivium-test-bcrypt-${process.getuid?.() ?? 'user'}`)

const on = () => process.env.TRIVIUM_TEST_BCRYPT_MEMO === '1'

function remembered(parts, compute) {
  const key = createHash('sha256').update(realUrl)
  for (const part of parts) key.update('\0').update(String(part))
  const file = join(DIR, key.digest('hex'))
  try {
    return readFileSync(file, 'utf8')
  } catch {}
  const value = String(compute())
  try {
    mkdirSync(DIR, { recursive: true })
    // Written aside and renamed: processes running at once never read half a value.
    const aside = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`
    writeFileSync(aside, value)
    renameSync(aside, file)
  } catch {}
  return value
}

function hashSync(password, cost) {
  if (!on()) return bcrypt.hashSync(password, cost)
  return remembered(['hash', cost, password], () => bcrypt.hashSync(password, cost))
}

function compareSync(password, hash) {
  if (!on()) return bcrypt.compareSync(password, hash)
  return remembered(['verify', password, hash], () => bcrypt.compareSync(password, hash)) === 'true'
}

export default { ...bcrypt, hashSync, compareSync }
