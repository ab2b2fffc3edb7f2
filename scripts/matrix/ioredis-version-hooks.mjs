// The resolve hook registered by ioredis-version.mjs (`ioredis` and `ioredis/…`): the alias is looked up from the repository root, where it is
// installed; ioredis' own dependencies then resolve from its own location as usual.
const root = new URL('../../package.json', import.meta.url).href

export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'ioredis' || specifier.startsWith('ioredis/')) {
    return nextResolve(`ioredis-oldest${specifier.slice('ioredis'.length)}`, { ...context, parentURL: root })
  }
  return nextResolve(specifier, context)
}
