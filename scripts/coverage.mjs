// Line coverage of the packages' sources, for scripts/test.mjs. Node writes it itself: NODE_V8_COVERAGE=<dir>
// (Node's public switch, inherited by every process a test starts: a demo instance, a worker) makes each
// process leave a V8 coverage file there at exit; `c8 report` maps it through the source maps of dist/ back
// to src/*.ts. Each package's share of covered lines is compared with its floor in
// scripts/coverage-floors.json, and the lines no test reaches are listed in coverage/uncovered.txt.
//
// Measured on 15 test files (one per package, CPU time of the whole run, load ~31 on 2 cores): 83.6 s
// without, 99.5 s with (+19 %), and `c8 report` 7.5 s more. Over the 10 % a developer's run should pay, so
// the coverage run is CI's (`CI=true`, where the suite's 17 minutes have a 90-minute budget and the machine
// is otherwise idle) and anyone's who asks (`--coverage` or TRIVIUM_COVERAGE=1); a plain local run skips it.
// After each test file the runner cuts the files down to what the report can count (pruneCoverage below): on 6
// files (load ~28) the run's own CPU (beside its files') went 10.2 → 8.5 s and the report's tail 29.9 → 14.8 s
// of wall time, the same coverage-summary.json.
import { spawnSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import ts from 'typescript'

export const COVERAGE_DIR = resolve('coverage')
const V8_DIR = join(COVERAGE_DIR, 'v8')
const FLOORS_FILE = 'scripts/coverage-floors.json'

/** Whether this run measures coverage: `--coverage`, TRIVIUM_COVERAGE=1, or CI. */
export function coverageWanted(args) {
  return args.includes('--coverage') || process.env.TRIVIUM_COVERAGE === '1' || process.env.CI === 'true'
}

/** A fresh directory for V8's files, and the environment every test process gets. */
export function startCoverage() {
  rmSync(COVERAGE_DIR, { recursive: true, force: true })
  mkdirSync(V8_DIR, { recursive: true })
  return { NODE_V8_COVERAGE: V8_DIR }
}

/** What V8 wrote for the scripts below packages/ (the only ones the report can count) starts with this. */
const PACKAGES_URL = `${pathToFileURL(resolve('packages')).href}/`
/** Files already pruned (their names start so). */
const PRUNED = 'pruned-'
/** Per script URL: whether the report could count it (see keepScript). */
const kept = new Map()

/**
 * Cuts each finished process's V8 file down to the scripts the report can count; scripts/test.mjs calls it
 * after each test file. A process's file holds every script it ran (tap, fastify, pg, Node's own: 3–8 MB for
 * a test process), and with `--exclude-after-remap` `c8 report` converts every one of them, reading the
 * script and its source map, before it drops all but packages/*: at the end of the run, alone, and holding
 * every file in memory at once. A file another process is still writing does not parse and is left for the
 * next call. The report is the same: a script is kept when it lies below packages/ or its source map names
 * a file there (the only scripts `--include packages/*` can keep after remapping).
 */
export function pruneCoverage(dir = V8_DIR) {
  let names = []
  try {
    names = readdirSync(dir)
  } catch {
    return
  }
  for (const name of names) {
    if (name.startsWith(PRUNED) || !name.endsWith('.json')) continue
    const file = join(dir, name)
    let report
    try {
      report = JSON.parse(readFileSync(file, 'utf8'))
    } catch {
      continue // still being written
    }
    const maps = report['source-map-cache'] ?? {}
    const result = (report.result ?? []).filter((script) => keepScript(script.url, maps[script.url]))
    const urls = new Set(result.map((script) => script.url))
    const pruned = { ...report, result }
    if (report['source-map-cache'])
      pruned['source-map-cache'] = Object.fromEntries(Object.entries(maps).filter(([url]) => urls.has(url)))
    const aside = join(dir, `.${name}`)
    writeFileSync(aside, JSON.stringify(pruned))
    renameSync(aside, join(dir, PRUNED + name))
    rmSync(file, { force: true })
  }
}

/**
 * True for a script below packages/, or one whose source map names a file there: the map Node kept
 * (`cached`, when the process had source maps on), else the one the script's sourceMappingURL names, as
 * c8 would read it.
 */
function keepScript(url, cached) {
  if (typeof url !== 'string') return false
  if (url.startsWith(PACKAGES_URL)) return true
  if (kept.has(url)) return kept.get(url)
  let keep = false
  try {
    const map = cached?.data ?? sourceMapOf(url)
    const base = new URL(map?.sourceRoot ?? '', url)
    keep = (map?.sources ?? []).some((source) => new URL(source, base).href.startsWith(PACKAGES_URL))
  } catch {}
  kept.set(url, keep)
  return keep
}

/** The source map a file: script names in its last sourceMappingURL comment (inline or a file), if any. */
function sourceMapOf(url) {
  if (!url.startsWith('file:')) return undefined
  const code = readFileSync(new URL(url), 'utf8')
  const ref = [...code.matchAll(/\/\/[#@] sourceMappingURL=(\S+)/g)].at(-1)?.[1]
  if (ref === undefined) return undefined
  const inline = /^data:application\/json[^,]*;base64,(.*)$/.exec(ref)
  if (inline) return JSON.parse(Buffer.from(inline[1], 'base64').toString('utf8'))
  return JSON.parse(readFileSync(new URL(ref, url), 'utf8'))
}

/** `3-7, 12`: consecutive line numbers joined into ranges. */
function ranges(lines) {
  const out = []
  for (const line of lines) {
    const last = out.at(-1)
    if (last && line === last[1] + 1) last[1] = line
    else out.push([line, line])
  }
  return out.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(', ')
}

/** Per source file, the lines with a statement no test ran (from c8's istanbul JSON). */
function uncoveredLines(finalJson) {
  const files = []
  for (const [file, data] of Object.entries(finalJson)) {
    const missed = new Set()
    for (const [id, count] of Object.entries(data.s)) {
      if (count > 0) continue
      const { start, end } = data.statementMap[id]
      for (let line = start.line; line <= end.line; line++) missed.add(line)
    }
    if (missed.size > 0)
      files.push({ file: relative(process.cwd(), file), lines: [...missed].sort((a, b) => a - b) })
  }
  return files.sort((a, b) => a.file.localeCompare(b.file))
}

/** Covered and total lines per package (`packages/<name>/src/…`). */
function perPackage(summary) {
  const packages = new Map()
  for (const [file, data] of Object.entries(summary)) {
    const match = /(?:^|\/)packages\/([^/]+)\/src\//.exec(relative(process.cwd(), file))
    if (!match) continue
    const sum = packages.get(match[1]) ?? { covered: 0, total: 0 }
    sum.covered += data.lines.covered
    sum.total += data.lines.total
    packages.set(match[1], sum)
  }
  return packages
}

/**
 * Turns the V8 files into the report: coverage/coverage-summary.json, coverage/uncovered.txt and one line per
 * package. `enforce` (the whole suite ran): a package under its floor fails the run. Its lines and failures.
 */
export function finishCoverage({ enforce }) {
  pruneCoverage()
  const c8 = spawnSync(
    process.execPath,
    [
      'node_modules/c8/bin/c8.js',
      'report',
      '--temp-directory',
      V8_DIR,
      '--reports-dir',
      COVERAGE_DIR,
      '--reporter',
      'json-summary',
      '--reporter',
      'json',
      '--include',
      'packages/*/src/**',
      '--include',
      'packages/*/dist/**',
      '--exclude-after-remap',
      '--all',
      '--src',
      'packages',
      '--extension',
      '.ts',
      '--exclude',
      'packages/*/src/**/*.d.ts',
      ...reexportOnlyFiles().flatMap((file) => ['--exclude', file]),
    ],
    { encoding: 'utf8' },
  )
  const summaryFile = join(COVERAGE_DIR, 'coverage-summary.json')
  if (c8.status !== 0 || !existsSync(summaryFile)) {
    return {
      lines: [`coverage: c8 report failed (${c8.status}): ${c8.stderr.trim()}`],
      failures: ['coverage report'],
    }
  }
  rmSync(V8_DIR, { recursive: true, force: true })
  const summary = JSON.parse(readFileSync(summaryFile, 'utf8'))
  const missed = uncoveredLines(JSON.parse(readFileSync(join(COVERAGE_DIR, 'coverage-final.json'), 'utf8')))
  writeFileSync(
    join(COVERAGE_DIR, 'uncovered.txt'),
    `# Lines with a statement no test ran, per source file (${new Date().toISOString()})\n${missed
      .map(({ file, lines }) => `${file}: ${ranges(lines)}`)
      .join('\n')}\n`,
  )
  const floors = JSON.parse(readFileSync(FLOORS_FILE, 'utf8')).floors
  const lines = []
  const failures = []
  for (const [name, { covered, total }] of [...perPackage(summary)].sort()) {
    const pct = total === 0 ? 100 : Math.floor((covered / total) * 1000) / 10
    const floor = floors[name]
    const under = enforce && floor !== undefined && pct < floor
    lines.push(
      `coverage ${name}: ${pct} % of ${total} lines (floor ${floor ?? 'none'})${under ? ' UNDER FLOOR' : ''}`,
    )
    if (under)
      failures.push(`coverage: @trivium/${name} ${pct} % is under its floor ${floor} % (${FLOORS_FILE})`)
  }
  lines.push(
    `coverage: lines no test reaches are listed in ${relative(process.cwd(), COVERAGE_DIR)}/uncovered.txt`,
  )
  if (!enforce) lines.push('coverage: floors are checked when the whole suite runs')
  return { lines, failures }
}

/**
 * Source files whose every statement re-exports from another module (`export … from`), as a package's
 * index often is: none of their lines runs code, and a package bundled by scripts/build-package.mjs leaves
 * them out of its source map, so `--all` would count every line as never reached.
 */
function reexportOnlyFiles() {
  const out = []
  const visit = (dir) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) visit(path)
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts') && reexportsOnly(path)) out.push(path)
    }
  }
  for (const pkg of readdirSync('packages'))
    if (existsSync(join('packages', pkg, 'src'))) visit(join('packages', pkg, 'src'))
  return out
}

function reexportsOnly(path) {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest)
  return (
    source.statements.length > 0 &&
    source.statements.every((s) => ts.isExportDeclaration(s) && s.moduleSpecifier !== undefined)
  )
}
