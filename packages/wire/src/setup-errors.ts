// Refusals at setup (a plugin's options, a constructor's arguments): each a TypeError with a stable
// `code`, kept in one table per package (`src/setup-errors.ts`) the way Fastify keeps `lib/errors.js`, so a
// user can search for the code and a test can assert it without matching prose. The rules every package
// shares (an unknown option, the nearest name for a typo) live here once.

/** A refusal at setup: `instanceof TypeError` holds (it is what was thrown before codes), with `code`. */
export class SetupError extends TypeError {
  readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.code = code
  }
}

/** One row of a package's table: when it is thrown (for the README) and its message after `<package>: `. */
export interface SetupErrorRow<A extends unknown[]> {
  readonly when: string
  readonly message: (...args: A) => string
}

/** A package's table, as functions building each error: `SETUP.TRV_X(args)`. */
export type SetupErrorTable<T> = {
  readonly [K in keyof T]: T[K] extends SetupErrorRow<infer A> ? (...args: A) => SetupError : never
}

/**
 * A package's setup errors from its rows: each key is the code, each message starts with `<pkg>: ` (with
 * `pkg` '', the row writes the whole message: a helper shared by several packages names its caller).
 * `rows` is kept on the result (non-enumerable) to document and check the table.
 */
export function setupErrors<const T extends Record<string, SetupErrorRow<never[]>>>(
  pkg: string,
  rows: T,
): SetupErrorTable<T> & { readonly rows: T } {
  const table: Record<string, (...args: never[]) => SetupError> = {}
  for (const [code, row] of Object.entries(rows)) {
    const prefix = pkg === '' ? '' : `${pkg}: `
    table[code] = (...args) => new SetupError(code, prefix + row.message(...args))
  }
  Object.defineProperty(table, 'rows', { value: rows })
  return table as SetupErrorTable<T> & { readonly rows: T }
}

/** Code of an option name the plugin does not know (a typo would otherwise be ignored silently). */
export const UNKNOWN_OPTION = 'TRV_SETUP_UNKNOWN_OPTION'

/** What Fastify itself puts in the options a plugin receives (`register(plugin, { prefix, logLevel })`). */
export const FASTIFY_REGISTER_OPTIONS: readonly string[] = ['prefix', 'logLevel', 'logSerializers']

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

/** ` (did you mean "x"?)`, or '' when there is no candidate. */
export function didYouMean(candidates: Iterable<string>, name: string): string {
  const closest = closestName(candidates, name)
  return closest === undefined ? '' : ` (did you mean "${closest}"?)`
}

/**
 * Every option name of `O`, checked by the compiler both ways: a name `O` lacks is refused, and so is a
 * list missing one of `O`'s names (the error names it under `missing`).
 */
export function optionNames<O>() {
  return <const K extends readonly (keyof O & string)[]>(
    ...names: K &
      ([Exclude<keyof O & string, K[number]>] extends [never]
        ? unknown
        : { missing: Exclude<keyof O & string, K[number]> })
  ): readonly string[] => names
}

/**
 * Refuses the first option name of `options` that is neither in `known` nor one Fastify passes itself:
 * `<plugin>: unknown option "notFoundHandlr" (did you mean "notFoundHandler"?)`, code TRV_SETUP_UNKNOWN_OPTION.
 * `where` prefixes nested options (`cors.` for `{ cors: { … } }`).
 */
export function refuseUnknownOptions(
  plugin: string,
  options: unknown,
  known: readonly string[],
  where = '',
): void {
  if (typeof options !== 'object' || options === null) return
  for (const key of Object.keys(options)) {
    if (known.includes(key) || (where === '' && FASTIFY_REGISTER_OPTIONS.includes(key))) continue
    throw new SetupError(
      UNKNOWN_OPTION,
      `${plugin}: unknown option "${where}${key}"${didYouMean(known, key)}`,
    )
  }
}

/** @trivium/wire's own refusals at setup (README "Setup errors"); its messages name no package (as before). */
export const SETUP = setupErrors('', {
  TRV_WIRE_MAX_FRAME_BYTES: {
    when: "`TcpFrameReader`'s `maxFrameBytes` is not an integer of at least the smallest frame",
    message: (min: number) => `maxFrameBytes must be an integer of at least ${min}`,
  },
})
