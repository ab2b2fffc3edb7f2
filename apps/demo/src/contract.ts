// The demo's contract-defined group (issue 41): endpoints declared as data — name, HTTP route, request
// and response schemas written with TypeBox and Zod 4, as a service already writes them — with no code
// generation. The server implements it (app.ts, `implement`) and a client imports it
// (`createClient({ contract: textContract })`): both are typed by these schemas. The rest of the API
// stays on the codegen path (schema/trivium.json).
import { defineContract } from '@trivium/contract'
import { Type } from 'typebox'
import { z } from 'zod'

const TextInput = Type.Object({ text: Type.String() }, { title: 'TextInput' })
const Slug = Type.Object({ slug: Type.String() }, { title: 'Slug' })
const StatsInput = z.object({ text: z.string() })
const TextStats = z.object({ characters: z.number().int(), words: z.number().int() })

export const textContract = defineContract({
  'text.slug': {
    method: 'POST',
    url: '/text/slug',
    request: TextInput,
    response: Slug,
    summary: 'The URL slug of a text (lower case, ASCII letters and digits, dashes)',
  },
  'text.stats': {
    method: 'POST',
    url: '/text/stats',
    request: StatsInput,
    response: TextStats,
    summary: 'How many characters (code points) and words a text has',
  },
})
