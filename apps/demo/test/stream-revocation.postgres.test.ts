// stream-revocation.test.ts's suite on PostgreSQL + Redis, in its own process (helpers.ts, BACKENDS).
import './stream-revocation.test.js'
