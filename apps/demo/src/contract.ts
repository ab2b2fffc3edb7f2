// The demo's contract-defined group (issue 41): endpoints declared as data — name, HTTP route, request
// and response schemas — with no code generation. The server implements it (app.ts, `implement`) and a
// client imports it (`createClient({ contract: textContract })`): both are typed by these schemas. The
// rest of the API stays on the codegen path (schema/trivium.json).
import { defineContract } from '@trivium/contract'
import { jsonSchemaModel } from '@trivium/core'

export interface SlugRequest {
  text: string
}
export interface Slug {
  slug: string
}
export interface TextStats {
  characters: number
  words: number
}

const SlugRequestModel = jsonSchemaModel<SlugRequest>('SlugRequest', {
  type: 'object',
  properties: { text: { type: 'string' } },
  required: ['text'],
})
const SlugModel = jsonSchemaModel<Slug>('Slug', {
  type: 'object',
  properties: { slug: { type: 'string' } },
  required: ['slug'],
})
const TextStatsModel = jsonSchemaModel<TextStats>('TextStats', {
  type: 'object',
  properties: { characters: { type: 'integer' }, words: { type: 'integer' } },
  required: ['characters', 'words'],
})

export const textContract = defineContract({
  'text.slug': {
    method: 'POST',
    url: '/text/slug',
    request: SlugRequestModel,
    response: SlugModel,
    summary: 'The URL slug of a text (lower case, ASCII letters and digits, dashes)',
  },
  'text.stats': {
    method: 'POST',
    url: '/text/stats',
    request: SlugRequestModel,
    response: TextStatsModel,
    summary: 'How many characters (code points) and words a text has',
  },
})
