// @trivium/codec's refusals at setup, one row per code (README "Setup errors"): each a TypeError with `code`.
import { setupErrors } from '@trivium/core/internal'

export const SETUP = setupErrors('@trivium/codec', {
  TRV_CODEC_OPTIONS: {
    when: "the Fastify plugin's options are not an object",
    message: () => 'options must be an object',
  },
})
