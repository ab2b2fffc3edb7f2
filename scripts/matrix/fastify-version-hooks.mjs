// The resolve hook registered by fastify-version.mjs. The alias is looked up from the repository root, where it is
// installed; Fastify's own dependencies then resolve from its own location as usual.
const root = new URL('../../package.json', import.meta.url).href

export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'fastify' || specifier.startsWith('fastify/')) {
    return nextResolve(`fastify-oldest${specifier.slice('fastify'.length)}`, { ...context, parentURL: root })
  }
  return nextResolve(specifier, context)
}
