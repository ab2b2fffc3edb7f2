// Issue 31 "Public APIs only": no package finds a private field of Fastify, ws or Node by its symbol's
// description (the way Fastify's options and hooks were read before).
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import t from 'tap'

t.test('no source of the packages reads private symbols by description', async (t) => {
  const root = new URL('../../', import.meta.url)
  const offenders: string[] = []
  let scanned = 0
  for (const pkg of readdirSync(root)) {
    const src = new URL(`${pkg}/src/`, root)
    if (!existsSync(src)) continue
    for (const file of readdirSync(src, { recursive: true, encoding: 'utf8' })) {
      if (!file.endsWith('.ts')) continue
      scanned++
      const text = readFileSync(new URL(file, src), 'utf8')
      if (/getOwnPropertySymbols|\.description ===/.test(text)) offenders.push(`${pkg}/src/${file}`)
    }
  }
  t.ok(scanned > 100, `${scanned} source files read`)
  t.same(offenders, [])
})
