#!/usr/bin/env node
// Committed launcher: pnpm links workspace bins at install, before `dist/` is built, so the bin must exist in
// the source tree. It only loads the compiled CLI.
import '../dist/cli.js'
