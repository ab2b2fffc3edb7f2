#!/usr/bin/env node
// trivium-codegen <schema.json> --out <dir>: writes models.ts (+ endpoints.ts, server.ts), index.ts and
// schemas/<Model>.json. A bad schema prints every problem (model, field, reason) and exits 1, without
// a stack trace.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { CHECK_USAGE, runCheck } from './check-cli.js'
import { generate, SchemaError } from './generator/index.js'

const USAGE = `usage: trivium-codegen <schema.json> --out <dir> [--runtime <module>] [--core <module>]\n       ${CHECK_USAGE.slice('usage: '.length)}`

function main(argv: string[]): number {
  let input: string | undefined
  let out: string | undefined
  let runtimeImport: string | undefined
  let coreImport: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === undefined) break
    if (a === '--out' || a === '-o') out = argv[++i]
    else if (a === '--runtime') runtimeImport = argv[++i]
    else if (a === '--core') coreImport = argv[++i]
    else if (a === '--help' || a === '-h') {
      process.stdout.write(`${USAGE}\n`)
      return 0
    } else if (a.startsWith('-')) {
      process.stderr.write(`trivium-codegen: unknown option ${a}\n${USAGE}\n`)
      return 1
    } else if (input === undefined) input = a
    else {
      process.stderr.write(`trivium-codegen: unexpected argument ${a}\n${USAGE}\n`)
      return 1
    }
  }
  if (!input || !out) {
    process.stderr.write(`${USAGE}\n`)
    return 1
  }
  let text: string
  try {
    text = readFileSync(input, 'utf8')
  } catch (err) {
    process.stderr.write(
      `trivium-codegen: cannot read ${input}: ${(err as NodeJS.ErrnoException).code ?? String(err)}\n`,
    )
    return 1
  }
  try {
    const files = generate(text, { runtimeImport, coreImport })
    for (const f of files) {
      const path = join(resolve(out), f.path)
      mkdirSync(dirname(path), { recursive: true })
      writeFileSync(path, f.contents)
    }
    process.stdout.write(`trivium-codegen: wrote ${files.length} files to ${out}\n`)
    return 0
  } catch (err) {
    if (err instanceof SchemaError) {
      for (const line of err.message.split('\n')) process.stderr.write(`trivium-codegen: ${input}: ${line}\n`)
      return 1
    }
    process.stderr.write(`trivium-codegen: ${err instanceof Error ? err.message : String(err)}\n`)
    return 1
  }
}

const args = process.argv.slice(2)
process.exitCode =
  args[0] === 'check'
    ? runCheck(
        args.slice(1),
        (text) => process.stdout.write(text),
        (text) => process.stderr.write(text),
      )
    : main(args)
