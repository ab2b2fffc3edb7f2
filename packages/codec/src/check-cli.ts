// `trivium-codegen check <new schema> --against <old schema file | git ref:path> [--level wire|wire+json] [--json]`:
// the schema evolution rule as a CI step (as `buf breaking` is for protobuf). Prints one line per breaking
// change and exits 1, or "compatible" and exits 0; `--json` prints the report for tools.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { type CompatibilityLevel, checkCompatibility } from './generator/compat.js'
import { SchemaError } from './generator/schema.js'

export const CHECK_USAGE =
  'usage: trivium-codegen check <schema.json> --against <old schema.json | git-ref:path> [--level wire|wire+json] [--json]'

type Write = (text: string) => void

/** The old schema's text: a file, else `<ref>:<path>` read with `git show` (the last release's tag, `origin/main`). */
function readAgainst(against: string): string {
  if (existsSync(against)) return readFileSync(against, 'utf8')
  const colon = against.indexOf(':')
  if (colon <= 0)
    throw new Error(
      `--against ${against}: no such file (or give <git ref>:<path>, e.g. v1.2.0:schema/api.json)`,
    )
  try {
    return execFileSync('git', ['show', against], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (err) {
    const detail = String((err as { stderr?: string }).stderr ?? '')
      .trim()
      .split('\n')[0]
    throw new Error(`--against ${against}: git show failed${detail ? `: ${detail}` : ''}`)
  }
}

export function runCheck(argv: string[], out: Write, err: Write): number {
  let input: string | undefined
  let against: string | undefined
  let level: CompatibilityLevel = 'wire+json'
  let json = false
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === undefined) break
    if (a === '--against') against = argv[++i]
    else if (a === '--level') {
      const value = argv[++i]
      if (value !== 'wire' && value !== 'wire+json') {
        err(`trivium-codegen check: --level must be wire or wire+json, got ${value}\n${CHECK_USAGE}\n`)
        return 2
      }
      level = value
    } else if (a === '--json') json = true
    else if (a === '--help' || a === '-h') {
      out(`${CHECK_USAGE}\n`)
      return 0
    } else if (a.startsWith('-') || input !== undefined) {
      err(`trivium-codegen check: unexpected argument ${a}\n${CHECK_USAGE}\n`)
      return 2
    } else input = a
  }
  if (input === undefined || against === undefined) {
    err(`${CHECK_USAGE}\n`)
    return 2
  }
  let report: ReturnType<typeof checkCompatibility>
  try {
    report = checkCompatibility(readAgainst(against), readFileSync(input, 'utf8'), { level })
  } catch (e) {
    const text = e instanceof SchemaError ? e.message.split('\n').join('; ') : (e as Error).message
    err(`trivium-codegen check: ${text}\n`)
    return 2
  }
  if (json) {
    out(`${JSON.stringify(report, null, 2)}\n`)
    return report.compatible ? 0 : 1
  }
  for (const change of report.changes)
    (change.breaking ? out : err)(`${change.breaking ? '' : 'note: '}${change.message}\n`)
  if (report.compatible) out(`compatible (${level})\n`)
  return report.compatible ? 0 : 1
}
