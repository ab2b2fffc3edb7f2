// `@trivium/auth/sql`: the SQL stores (PostgreSQL and PGlite through @trivium/sql). A subpath of its
// own so that `@trivium/auth` with the memory or Redis stores does not install a database driver.
import type { SqlClient } from '@trivium/sql'

declare module './users.js' {
  interface AuthTransactionTypes {
    tx: SqlClient
  }
}

export {
  AUTH_MIGRATIONS,
  migrateAuth,
  SingleWriterSqlRevocationStore,
  SqlRevocationStore,
  type SqlRevocationStoreOptions,
  SqlTokenLedger,
} from './sql-store.js'
export { SqlUserStore } from './sql-users.js'
