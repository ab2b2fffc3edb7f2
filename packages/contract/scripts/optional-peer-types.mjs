// typebox is an optional peer of @trivium/contract, used for types only. tsc drops comments on imports in the
// declarations it emits, so this puts the `@ts-ignore` above the type import of 'typebox' in
// dist/schema-types.d.ts: without typebox installed, a consumer that type-checks its dependencies
// (skipLibCheck off) gets no TS2307, and `Static`/`TSchema` are `any` (packages/adoption/test checks both).
import { readFileSync, writeFileSync } from 'node:fs'

const file = new URL('../dist/schema-types.d.ts', import.meta.url)
const IMPORT = "import type { Static, TSchema } from 'typebox';"
const DIRECTIVE =
  '// @ts-ignore -- typebox is an optional peer: without it these are any (no TypeBox schema to type)'
const text = readFileSync(file, 'utf8')
if (!text.includes(IMPORT)) {
  console.error(`optional-peer-types: "${IMPORT}" not found in dist/schema-types.d.ts; update this script`)
  process.exit(1)
}
if (!text.includes(DIRECTIVE)) writeFileSync(file, text.replace(IMPORT, `${DIRECTIVE}\n${IMPORT}`))
