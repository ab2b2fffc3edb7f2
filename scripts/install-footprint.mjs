#!/usr/bin/env node
// What a consumer installs: for each publishable package, `npm install` of its tarball (plus the tarballs
// of the @trivium/* packages it depends on, as the registry would supply them) into an empty app outside
// the workspace. npm installs non-optional peers too, so `fastify` is counted where it is a peer; the
// first row is fastify alone, for comparison. Prints a Markdown table. Not part of the tests (needs the
// npm cache or the registry; ~1 min). Usage: node scripts/install-footprint.mjs [--no-build]
import { execFileSync } from 'node:child_process'
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { closure, packAll, publishablePackages } from './pack.mjs'

const work = mkdtempSync(join(tmpdir(), 'trivium-footprint-'))
try {
  const tarballs = packAll(join(work, 'tarballs'), { ignoreScripts: process.argv.includes('--no-build') })
  const rows = [['fastify (baseline)', measure(join(work, 'fastify'), ['fastify@5'])]]
  for (const p of publishablePackages()) {
    rows.push([
      p.name,
      measure(
        join(work, p.name.replace('/', '-')),
        closure(p.name).map((n) => tarballs.get(n)),
      ),
    ])
  }
  console.log('| package | packages installed | size on disk |')
  console.log('|---|---:|---:|')
  for (const [name, { count, bytes }] of rows) {
    console.log(`| ${name} | ${count} | ${(bytes / 1024 / 1024).toFixed(2)} MB |`)
  }
} finally {
  rmSync(work, { recursive: true, force: true })
}

function measure(dir, specs) {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'footprint', private: true }))
  execFileSync(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...specs],
    {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  )
  const lock = JSON.parse(readFileSync(join(dir, 'node_modules', '.package-lock.json'), 'utf8'))
  const count = Object.keys(lock.packages).filter((k) => k.startsWith('node_modules/')).length
  return { count, bytes: size(join(dir, 'node_modules')) }
}

function size(path) {
  const st = lstatSync(path)
  if (!st.isDirectory()) return st.size
  return readdirSync(path).reduce((sum, e) => sum + size(join(path, e)), 0)
}
