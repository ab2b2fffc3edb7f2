export * from './cases.js'
export * from './generated/index.js'
export * from './server.js'
