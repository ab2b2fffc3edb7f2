#!/usr/bin/env node
// Runs every package's tests in one tap run and ends with the plain summary line CI reads:
// "N passed, N failed". Extra arguments are passed to tap (e.g. a file list). First it brings what the tests
// need (scripts/environment.mjs).
import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { prepare } from './environment.mjs'

const args = process.argv.slice(2)
function testFiles(dir) {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  )
}
const files =
  args.length > 0
    ? args
    : ['packages', 'apps']
        .flatMap((root) => (existsSync(root) ? readdirSync(root).map((p) => join(root, p, 'test')) : []))
        .concat('scripts/test')
        .flatMap(testFiles)
        .sort()
if (files.length === 0) {
  console.error('no test files found')
  process.exit(1)
}

// A fresh machine: start the databases, install the browser (one line says what happened).
console.log(await prepare())

const child = spawn('node_modules/.bin/tap', files, {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, FORCE_COLOR: '0' },
})
let tail = ''
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk)
  tail = (tail + chunk.toString()).slice(-4096)
})
child.on('close', (code) => {
  const match = /# \{ total: (\d+)(?:, pass: (\d+))?(?:, fail: (\d+))?/.exec(tail)
  let passed = 0
  let failed = 0
  if (match) {
    passed = Number(match[2] ?? 0)
    failed = Number(match[3] ?? 0)
    if (code !== 0 && failed === 0) failed = 1
  } else {
    failed = 1
  }
  console.log(`${passed} passed, ${failed} failed`)
  process.exit(code ?? 1)
})
