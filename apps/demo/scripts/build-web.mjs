// Bundles the browser page (src/web/main.ts + the browser entry of @trivium/client) into dist/web.
import { copyFileSync, mkdirSync } from 'node:fs'
import { build } from 'esbuild'

const out = new URL('../dist/web/', import.meta.url).pathname
mkdirSync(out, { recursive: true })
await build({
  entryPoints: [new URL('../src/web/main.ts', import.meta.url).pathname],
  bundle: true,
  platform: 'browser',
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: true,
  outfile: `${out}app.js`,
  logLevel: 'warning',
})
for (const file of ['index.html', 'app.css'])
  copyFileSync(new URL(`../src/web/${file}`, import.meta.url), `${out}${file}`)
