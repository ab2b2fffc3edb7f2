// Issue 40 item 6: the run-time check of the Fastify version (fastify-plugin's `fastify` range, checked by Fastify
// when a plugin is registered) must agree with the packages' peer range, so a service on an older Fastify 5 gets
// one clear line at start instead of running untested. Fastify 5.12.2, the peer floor, reports itself as 5.12.1
// (its `version` string was not bumped), so the run-time range starts at the version the floor reports.
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'

const root = join(import.meta.dirname, '..', '..')
const require = createRequire(join(root, 'package.json'))
const readJson = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8'))

type FastifyFactory = (options?: object) => {
  version: string
  register(plugin: unknown, options?: object): unknown
  ready(): Promise<unknown>
  close(): Promise<unknown>
}
// The floor (the version matrix's alias) and a Fastify 5 release below it, both root devDependencies.
const oldest: FastifyFactory = require('fastify-oldest')
const below: FastifyFactory = require('fastify-5-6')
const peerFloor = /^\^(\d+\.\d+\.\d+)$/.exec(
  readJson('packages/core/package.json').peerDependencies.fastify,
)?.[1]
const reportedFloor = oldest().version
const runtimeRange = `^${reportedFloor}`

interface Plugin {
  (...args: never[]): unknown
  [meta: symbol]: { name?: string; fastify?: string } | undefined
}
const META = Symbol.for('plugin-meta')

/** Every fastify-plugin function that a published package's entry points export (built `dist`), by plugin name. */
async function publishedPlugins(): Promise<Map<string, Plugin>> {
  const plugins = new Map<string, Plugin>()
  for (const dir of readdirSync(join(root, 'packages'))) {
    const manifest = readJson(join('packages', dir, 'package.json'))
    if (manifest.private || manifest.peerDependencies?.fastify === undefined) continue
    for (const entry of Object.values<{ default?: string }>(manifest.exports ?? {})) {
      if (typeof entry !== 'object' || entry.default === undefined) continue
      const module = await import(pathToFileURL(join(root, 'packages', dir, entry.default)).href)
      for (const value of Object.values<unknown>(module)) {
        const meta = typeof value === 'function' ? (value as Plugin)[META] : undefined
        if (meta?.name?.startsWith('@trivium/')) plugins.set(meta.name, value as Plugin)
      }
    }
  }
  return plugins
}

t.test('the floor is what the peer ranges name; it reports one patch lower', async (t) => {
  t.equal(readJson('node_modules/fastify-oldest/package.json').version, peerFloor)
  t.equal(
    reportedFloor,
    '5.12.1',
    'if a later floor reports itself truly, the run-time range is the peer range',
  )
  t.equal(below().version, '5.6.2')
})

t.test(
  "every Trivium plugin tells Fastify the peer range's floor (as the floor reports itself)",
  async (t) => {
    const plugins = await publishedPlugins()
    t.ok(plugins.size >= 15, `all plugins found (${[...plugins.keys()].join(', ')})`)
    for (const [name, plugin] of plugins) t.equal(plugin[META]?.fastify, runtimeRange, `${name}'s range`)
  },
)

t.test('on a Fastify 5 below the floor, each plugin refuses at ready() with one line', async (t) => {
  for (const [name, plugin] of await publishedPlugins()) {
    const app = below({ logger: false })
    app.register(plugin)
    await t.rejects(
      app.ready(),
      {
        code: 'FST_ERR_PLUGIN_VERSION_MISMATCH',
        message: `fastify-plugin: ${name} - expected '${runtimeRange}' fastify version, '5.6.2' is installed`,
      },
      name,
    )
    await app.close().catch(() => {})
  }
})

t.test('on the floor itself the version check passes', async (t) => {
  const plugins = await publishedPlugins()
  const core = plugins.get('@trivium/core')
  if (!core) throw new Error('@trivium/core not found')
  const app = oldest({ logger: false })
  app.register(core)
  await t.resolves(app.ready())
  await app.close()
  for (const [name, plugin] of plugins) {
    const other = oldest({ logger: false })
    other.register(plugin)
    // Plugins without their dependencies or options still refuse, but never for the version.
    const error = await other.ready().then(
      () => undefined,
      (e: { code?: string }) => e,
    )
    t.not(error?.code, 'FST_ERR_PLUGIN_VERSION_MISMATCH', name)
    await other.close().catch(() => {})
  }
})
