// `node --import=./scripts/ts/register.mjs file.ts`: runs a TypeScript test file (scripts/ts/hooks.mjs says how
// and why). Source maps on, as under tsx: a failure's stack names the .ts file and line.
import { register } from 'node:module'

process.setSourceMapsEnabled(true)
register('./hooks.mjs', import.meta.url)
