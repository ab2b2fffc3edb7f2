// text.*: the contract-defined group (src/contract.ts). Stateless helpers, public.
import type { ContractHandlers } from '@trivium/core'
import type { textContract } from '../contract.js'

export function textHandlers(): ContractHandlers<typeof textContract> {
  return {
    'text.slug': ({ text }) => ({
      slug: text
        .normalize('NFKD')
        .replace(/[\u0300-\u036f]/g, '')
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/^-+|-+$/g, ''),
    }),
    'text.stats': ({ text }) => ({
      characters: [...text].length,
      words: text.split(/\s+/).filter((word) => word !== '').length,
    }),
  }
}
