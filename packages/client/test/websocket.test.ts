import { frameSuite } from './frames-suite.js'

await frameSuite('websocket')
