// A package's README "Setup errors" table, read for the test that checks it lists exactly the codes of the
// package's table (issue 43 item 4): one reading of the table's shape for every package.
import { readFileSync } from 'node:fs'

/** The codes of the "Setup errors" table of the README at `readme` (rows "| `TRV_…` | when |"). */
export function readmeSetupCodes(readme: URL): string[] {
  const text = readFileSync(readme, 'utf8')
  const section = text.split('\n## Setup errors\n')[1]?.split('\n## ')[0] ?? ''
  return [...section.matchAll(/^\| `(TRV_[A-Z_]+)` \|/gm)].map((m) => m[1] ?? '')
}
