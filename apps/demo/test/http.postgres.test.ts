// http.test.ts's suite on PostgreSQL + Redis, in its own process (helpers.ts, BACKENDS): each backend's
// run stays under the runner's per-file time limit on a loaded machine.
import './http.test.js'
