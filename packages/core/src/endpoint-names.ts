// Endpoint names given in plugin options are checked at `ready()`: a typo would silently leave the real
// endpoint with default rules. The error names the typo and the closest registered name.
import { closestName, didYouMean } from '@trivium/wire'
import type { EndpointRegistry } from './registry.js'
import { SHARED_SETUP } from './setup-errors.js'

export { closestName }

/** The registered name nearest to `name` (Levenshtein), or undefined when none is registered. */
export function closestEndpointName(registry: EndpointRegistry, name: string): string | undefined {
  return closestName(
    registry.list().map((d) => d.name),
    name,
  )
}

/**
 * Throws TypeError `<plugin>: <option> names unknown endpoint "x" (did you mean "y"?)` for the first
 * name the registry does not hold.
 */
export function checkEndpointNames(
  registry: EndpointRegistry,
  plugin: string,
  option: string,
  names: Iterable<string>,
): void {
  for (const name of names) {
    if (registry.has(name)) continue
    const hint = didYouMean(
      registry.list().map((d) => d.name),
      name,
    )
    throw SHARED_SETUP.TRV_SETUP_UNKNOWN_ENDPOINT(plugin, option, name, hint)
  }
}
