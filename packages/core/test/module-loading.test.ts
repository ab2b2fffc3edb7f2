// Importing @trivium/core evaluates no dependency the host app's Fastify shares: ajv is loaded on the
// first schema model. Evaluated ahead of Fastify (an app importing core first), ajv alone made the app's
// own routes slower (bench/README.md, "module layout").
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const coreEntry = fileURLToPath(new URL('../dist/index.js', import.meta.url))

function ajvLoadedAfter(steps: string): boolean {
  const script = `
    import { createRequire } from 'node:module'
    const core = await import(${JSON.stringify(coreEntry)})
    ${steps}
    const cache = createRequire(import.meta.url).cache
    console.log(Object.keys(cache).some((file) => /[\\\\/]ajv[\\\\/]/.test(file)))
  `
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })
  return out.trim() === 'true'
}

t.test('importing core does not load ajv', async (t) => {
  t.equal(ajvLoadedAfter(''), false)
})

t.test('the first schema model loads it, and validates', async (t) => {
  t.equal(
    ajvLoadedAfter(`
      const model = core.jsonSchemaModel('Point', { type: 'object', required: ['x'], properties: { x: { type: 'number' } } })
      model.fromJSON({ x: 1 })
      try { model.fromJSON({}); throw new Error('accepted') } catch (err) { if (err.message !== 'Invalid Point: x is required') throw err }
    `),
    true,
  )
})
