// Counts what issue 43 item 8 asks to narrow, in packages/*/src (generated files included): every `any`
// type (AnyKeyword, and each reference to an alias declared as `type X = any`, so that renaming `any`
// does not hide it) and every `x[i] as T` (an AsExpression over an element access), per file.
// Usage: node scripts/count-any.mjs [root] [--files] [--casts]
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'

const root = process.argv.find((a, i) => i > 1 && !a.startsWith('--')) ?? join(import.meta.dirname, '..')
function files(dir) {
  const out = []
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) out.push(...files(path))
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(path)
  }
  return out
}
const sources = []
for (const pkg of readdirSync(join(root, 'packages'))) {
  const src = join(root, 'packages', pkg, 'src')
  try {
    statSync(src)
  } catch {
    continue
  }
  for (const path of files(src))
    sources.push(ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true))
}
// Names of aliases of `any` anywhere in the packages (by name: an import may rename one, which this misses).
const anyAliases = new Set()
for (const source of sources) {
  const visit = (node) => {
    if (ts.isTypeAliasDeclaration(node) && node.type.kind === ts.SyntaxKind.AnyKeyword)
      anyAliases.add(node.name.text)
    ts.forEachChild(node, visit)
  }
  visit(source)
}
let anys = 0
let casts = 0
const perFile = []
for (const source of sources) {
  const path = source.fileName
  let a = 0
  let c = 0
  const visit = (node) => {
    if (node.kind === ts.SyntaxKind.AnyKeyword) a++
    if (ts.isTypeReferenceNode(node) && ts.isIdentifier(node.typeName) && anyAliases.has(node.typeName.text))
      a++
    if (ts.isAsExpression(node) && ts.isElementAccessExpression(node.expression)) {
      c++
      if (process.argv.includes('--casts')) {
        const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1
        console.log(`${relative(root, path)}:${line}: ${node.getText()}`)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  anys += a
  casts += c
  if (a + c > 0)
    perFile.push(`${String(a).padStart(3)} any ${String(c).padStart(3)} x[i] as T  ${relative(root, path)}`)
}
if (process.argv.includes('--files')) console.log(perFile.sort().reverse().join('\n'))
console.log(`any: ${anys}  x[i] as T: ${casts}`)
