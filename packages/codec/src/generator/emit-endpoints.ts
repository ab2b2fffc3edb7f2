// The emitter's endpoint files: `endpoints.ts` (the endpoint table and the typed client) and `server.ts`
// (the handlers' interface and `registerEndpoints`).
import { HEADER, q, RT } from './emit-shared.js'
import type { EndpointDef, SchemaDef } from './schema.js'

function modelImports(endpoints: EndpointDef[], withData: boolean): string[] {
  const names = new Set<string>()
  for (const e of endpoints) {
    names.add(e.request)
    names.add(e.response)
  }
  const out = [...names].sort()
  return withData ? out.flatMap((n) => [n, `type ${n}Data`]) : out
}

/** The typed client's nesting: endpoint names split at their dots. */
type Tree = { [k: string]: Tree | EndpointDef }

function endpointTree(eps: EndpointDef[]): Tree {
  const tree: Tree = {}
  for (const e of eps) {
    const parts = e.name.split('.')
    let node = tree
    for (const part of parts.slice(0, -1)) {
      if (node[part] === undefined) node[part] = {}
      node = node[part] as Tree
    }
    node[parts[parts.length - 1]!] = e
  }
  return tree
}

/** A property name as written in the typed client: quoted unless an identifier. */
const clientKey = (k: string) => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(k) ? k : q(k))

/** The typed client's members for `node`: one method per endpoint, one object per namespace. */
function emitTree(node: Tree, indent: string): string[] {
  const out: string[] = []
  for (const [k, v] of Object.entries(node)) {
    if ('request' in v && typeof (v as EndpointDef).request === 'string') {
      const e = v as EndpointDef
      if (e.requestStream) {
        const [open, handle] = e.streaming
          ? ['openBidiStream', 'RuntimeBidiStream']
          : ['openClientStream', 'RuntimeClientStream']
        out.push(
          `${indent}${clientKey(k)}: (options?: ${RT}.CallOptions): ${RT}.${handle}<${e.request}Data, ${e.response}> =>`,
          `${indent}  ${open}<${e.request}Data, ${e.response}>(${e.response}, client, ${q(e.name)}, options),`,
        )
      } else if (e.streaming) {
        out.push(
          `${indent}${clientKey(k)}: (request: ${e.request}Data, options?: ${RT}.CallOptions): AsyncIterable<${e.response}> =>`,
          `${indent}  asModels(${e.response}, client.stream(${q(e.name)}, request, options)),`,
        )
      } else {
        out.push(
          `${indent}${clientKey(k)}: async (request: ${e.request}Data, options?: ${RT}.CallOptions): Promise<${e.response}> =>`,
          `${indent}  asModel(${e.response}, await client.call(${q(e.name)}, request, options)),`,
        )
      }
    } else {
      out.push(`${indent}${clientKey(k)}: {`, ...emitTree(v as Tree, `${indent}  `), `${indent}},`)
    }
  }
  return out
}

export function endpointsFile(schema: SchemaDef, runtimeImport: string): string {
  const eps = schema.endpoints
  const lines = [HEADER, `import type * as ${RT} from ${q(runtimeImport)}`]
  const opens = [
    ...(eps.some((e) => e.requestStream && !e.streaming) ? ['openClientStream'] : []),
    ...(eps.some((e) => e.requestStream && e.streaming) ? ['openBidiStream'] : []),
  ]
  lines.push(`import { ${['asModel', 'asModels', ...opens].join(', ')} } from ${q(runtimeImport)}`)
  lines.push(`import { ${modelImports(eps, true).join(', ')} } from './models.js'`, '')
  lines.push('/** Every endpoint of the schema: name, HTTP route, models and pass-through settings. */')
  lines.push('export const endpoints = {')
  for (const e of eps) {
    lines.push(`  ${q(e.name)}: {`)
    lines.push(`    name: ${q(e.name)},`)
    lines.push(`    method: ${q(e.method)},`)
    lines.push(`    url: ${q(e.url)},`)
    lines.push(`    status: ${e.status},`)
    lines.push(`    request: ${e.request},`)
    lines.push(`    response: ${e.response},`)
    lines.push(`    streaming: ${e.streaming},`)
    if (e.requestStream) lines.push('    requestStream: true,')
    lines.push(`    config: ${JSON.stringify(e.config)},`)
    lines.push('  },')
  }
  lines.push(`} as const satisfies Record<string, ${RT}.EndpointSpec<any, any>>`, '')
  lines.push('export type Endpoints = typeof endpoints')
  lines.push('export type EndpointName = keyof Endpoints', '')

  lines.push(
    '/**',
    ' * Typed view of a runtime client (HTTP, WebSocket or TCP): requests are handed over in their JSON',
    ' * form; responses may come back as instances, JSON or binary bytes and are returned as instances.',
    ' */',
    `export function createTypedClient(client: ${RT}.RuntimeClient) {`,
    '  return {',
    ...emitTree(endpointTree(eps), '    '),
    '  }',
    '}',
    '',
    'export type TypedClient = ReturnType<typeof createTypedClient>',
  )
  return `${lines.join('\n')}\n`
}

export function serverFile(schema: SchemaDef, coreImport: string): string {
  const eps = schema.endpoints
  const lines = [HEADER, `import type { Trivium, TriviumCall } from ${q(coreImport)}`]
  lines.push(`import { ${modelImports(eps, true).join(', ')} } from './models.js'`, '')
  lines.push(
    '/** One handler per endpoint, typed by the schema: a wrong request or response type does not compile. */',
  )
  lines.push('export interface EndpointHandlers {')
  for (const e of eps) {
    const result = e.streaming
      ? `AsyncIterable<${e.response}Data>`
      : `${e.response}Data | Promise<${e.response}Data>`
    const input = e.requestStream ? `requests: AsyncIterable<${e.request}>` : `request: ${e.request}`
    lines.push(`  ${q(e.name)}: (${input}, call: TriviumCall<${e.request}>) => ${result}`)
  }
  lines.push('}', '')
  eps.forEach((e, i) => {
    const config = Object.entries(e.config)
      // Literal types for strings and booleans (`auth: "public"`, `rateLimit: false`), as the options expect.
      .map(
        ([k, v]) =>
          `${k}: ${JSON.stringify(v)}${typeof v === 'string' || typeof v === 'boolean' ? ' as const' : ''}`,
      )
      .join(', ')
    lines.push(`const config${i} = { ${config} }`)
  })
  lines.push('')
  lines.push('/** Registers every endpoint of the schema with `trivium.endpoint` / `trivium.stream`. */')
  lines.push('export function registerEndpoints(trivium: Trivium, handlers: EndpointHandlers): void {')
  eps.forEach((e, i) => {
    const fn = e.requestStream
      ? e.streaming
        ? 'bidiStream'
        : 'clientStream'
      : e.streaming
        ? 'stream'
        : 'endpoint'
    lines.push(
      `  trivium.${fn}<${e.request}, ${e.response}Data>(`,
      `    ${q(e.name)},`,
      `    { ...config${i}, method: ${q(e.method)}, url: ${q(e.url)}, status: ${e.status}, request: ${e.request}, response: ${e.response} },`,
      `    handlers[${q(e.name)}],`,
      '  )',
    )
  })
  lines.push('}')
  return `${lines.join('\n')}\n`
}
