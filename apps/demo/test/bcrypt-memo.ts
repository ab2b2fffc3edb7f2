// Repeated bcrypt hashes and verifies are remembered in the demo's tests that run the demo in their own
// process (scripts/ts/bcrypt-memo.mjs says what that keeps and why). Importing this turns it on: set before
// any demo starts its password workers, which copy the environment. A file that watches bcrypt's duration
// sets it to '0' before its first demo. Demo servers started as plain `node` children compute every hash:
// the module hook it needs cost them more CPU to load than it saved (settings-backends.test.ts 22.7 → 30.3 s).
process.env.TRIVIUM_TEST_BCRYPT_MEMO ??= '1'
