// `pnpm bench crypto`
import './event-loop.mjs'
