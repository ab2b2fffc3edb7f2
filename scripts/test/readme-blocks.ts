// README code blocks that a reader is told to run (issue 40 item 11). Each carries, on the line before its fence, the
// marker `<!-- tested: <test file> -->` (invisible on GitHub) naming the test that runs it as written; the test reads
// the block from the README text through `testedSection`, never from a copy. scripts/test/readme-runnable.test.ts
// checks that every block whose prose says it runs has a marker, and that every marker's test exists and reads it.
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { Test } from 'tap'
import { waitBound } from './waits.js'

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

/**
 * Runs a JavaScript block as the README tells a user to: saved as `fileName` in a scratch folder inside `dir` (a
 * package's test folder, so that its imports resolve as for that package's users) and run with `node <fileName>` in a
 * plain Node process (without the tsx and tap hooks of NODE_OPTIONS). Resolves to what it printed; rejects when it
 * fails or has not exited by itself within 5 s (idle machine).
 */
export async function runJsBlock(t: Test, code: string, dir: URL, fileName: string): Promise<string> {
  const scratch = mkdtempSync(join(fileURLToPath(dir), '.readme-'))
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }))
  writeFileSync(join(scratch, fileName), code)
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(NODE_OPTIONS|TAP|_TAPJS)/.test(k)),
  )
  const { stdout } = await promisify(execFile)(process.execPath, [fileName], {
    cwd: scratch,
    env,
    timeout: waitBound(5_000),
  })
  return stdout
}
