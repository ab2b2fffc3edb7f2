// README code blocks that a reader is told to run (issue 40 item 11). Each carries, on the line before its fence, the
// marker `<!-- tested: <test file> -->` (invisible on GitHub) naming the test that runs it as written; the test reads
// the block from the README text through `testedSection`, never from a copy. scripts/test/readme-runnable.test.ts
// checks that every block whose prose says it runs has a marker, and that every marker's test exists and reads it.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export const root = join(import.meta.dirname, '..', '..')

export interface Block {
  /** The fence's language (`ts`, `js`, `sh`, …). */
  lang: string
  /** The block's text, without the indentation of the fence (blocks inside list items are indented). */
  code: string
  /** Offset of the fence in the README. */
  start: number
  /** Offset just past the closing fence. */
  end: number
}

/** Every fenced block of a markdown text, in order. */
export function fencedBlocks(markdown: string): Block[] {
  return [...markdown.matchAll(/^( *)```(\w*)\n([\s\S]*?)^\1```$/gm)].map((m) => {
    const indent = m[1] ?? ''
    const code = (m[3] ?? '')
      .split('\n')
      .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line))
      .join('\n')
    return { lang: m[2] ?? '', code, start: m.index, end: m.index + m[0].length }
  })
}

export function markerFor(testFile: string): string {
  return `<!-- tested: ${testFile} -->`
}

/**
 * The blocks that the marker naming `testFile` (a path from the repository root) opens in the README at `readme`
 * (also from the root): the marked block, then the blocks after it up to the next heading (e.g. the shell lines
 * the README shows with their answers). Throws when the README has no such marker, so a test cannot pass on nothing.
 */
export function testedSection(readme: string, testFile: string): Block[] {
  const markdown = readFileSync(join(root, readme), 'utf8')
  const at = markdown.indexOf(markerFor(testFile))
  if (at === -1) throw new Error(`${readme} has no ${markerFor(testFile)}`)
  const heading = /^#{1,6} /m.exec(markdown.slice(at))
  const until = heading === null ? markdown.length : at + heading.index
  const blocks = fencedBlocks(markdown).filter((b) => b.start > at && b.start < until)
  const first = blocks[0]
  if (first === undefined || markdown.slice(at, first.start).trim() !== markerFor(testFile)) {
    throw new Error(`${readme}: ${markerFor(testFile)} must be the line just before a code block`)
  }
  return blocks
}
