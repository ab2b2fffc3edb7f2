// Issue 40 item 11: every README code block that the reader is told to run ("runnable", "save this as …", "run
// `node …`") is run by a test as written. Such a block carries the marker `<!-- tested: <test file> -->` on the line
// before it (scripts/test/readme-blocks.ts); this file fails for a block told to run without one, and for a marker
// whose test does not exist or does not read the block from the README.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { fencedBlocks, markerFor, root, testedSection } from './readme-blocks.ts'

/** Prose that tells the reader to run the block after it. */
const TOLD_TO_RUN =
  /\brunnable\b|\bsave (?:this|it) as\b|\brun `(?:node|npx|tsx) |`node [\w.-]+\.m?js`|\bruns? (?:it )?as written\b/i
const CODE = new Set(['ts', 'typescript', 'js', 'javascript', 'mjs'])
const MARKER = /<!-- tested: (\S+) -->/g

const readmes = ['README.md'].concat(
  ...['packages', 'apps'].map((dir) =>
    readdirSync(join(root, dir))
      .map((p) => join(dir, p, 'README.md'))
      .filter((file) => existsSync(join(root, file))),
  ),
)

t.test(
  'every code block a README tells the reader to run is marked with the test that runs it',
  async (t) => {
    let told = 0
    for (const readme of readmes) {
      const markdown = readFileSync(join(root, readme), 'utf8')
      let proseStart = 0
      for (const block of fencedBlocks(markdown)) {
        // The prose since the previous block or heading, whichever is later
        const before = markdown.slice(proseStart, block.start)
        const lastHeading = [...before.matchAll(/^#{1,6} .*$/gm)].at(-1)
        const prose = lastHeading === undefined ? before : before.slice(lastHeading.index)
        proseStart = block.end
        if (!CODE.has(block.lang) || !TOLD_TO_RUN.test(prose.replace(MARKER, ''))) continue
        told++
        const line = markdown.slice(0, block.start).split('\n').length
        t.match(
          prose.trimEnd(),
          /<!-- tested: \S+ -->$/,
          `${readme}:${line} is told to run: its test is named`,
        )
      }
    }
    t.ok(told >= 5, `blocks told to run: ${told}`)
  },
)

t.test('every marker names a test that reads its block from the README', async (t) => {
  let markers = 0
  for (const readme of readmes) {
    const markdown = readFileSync(join(root, readme), 'utf8')
    for (const [, testFile = ''] of markdown.matchAll(MARKER)) {
      markers++
      t.ok(existsSync(join(root, testFile)), `${readme}: ${testFile} exists`)
      t.doesNotThrow(() => testedSection(readme, testFile), `${readme}: the marker opens a code block`)
      const source = existsSync(join(root, testFile)) ? readFileSync(join(root, testFile), 'utf8') : ''
      const reads =
        source.includes(markerFor(testFile)) ||
        (source.includes(`'${readme}'`) && source.includes(`'${testFile}'`))
      t.ok(reads, `${testFile} reads its block of ${readme} (testedSection or the marker itself)`)
    }
  }
  t.ok(markers >= 6, `markers: ${markers}`)
})
