// auth-sessions.test.ts's suite on PostgreSQL + Redis, in its own process (helpers.ts, BACKENDS): each backend's
// run stays under the runner's per-file time limit on a loaded machine.
import './auth-sessions.test.js'
