// Endpoint names given in plugin options are checked at `ready()`: a typo would silently leave the real
// endpoint with default rules. The error names the typo and the closest registered name.
import type { EndpointRegistry } from './registry.js'

function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      row.push(Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost))
    }
    previous = row
  }
  return previous[b.length] ?? 0
}

/** The candidate nearest to `name` (Levenshtein), or undefined when there is none. */
export function closestName(candidates: Iterable<string>, name: string): string | undefined {
  let best: string | undefined
  let bestDistance = Number.POSITIVE_INFINITY
  for (const candidate of candidates) {
    const d = distance(name, candidate)
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  return best
}

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
    const closest = closestEndpointName(registry, name)
    const hint = closest === undefined ? '' : ` (did you mean "${closest}"?)`
    throw new TypeError(`${plugin}: ${option} names unknown endpoint "${name}"${hint}`)
  }
}
