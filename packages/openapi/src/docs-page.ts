// The HTML docs page: rendered on the server from the OpenAPI document, one string with its CSS inline
// and no script, so it loads nothing from anywhere. Every interpolated value goes through `escapeHtml`.
import { createHash } from 'node:crypto'
import type { OpenApiDocument, OpenApiOperation } from './document.js'
import { COMPONENT_PREFIX, type Schema } from './schemas.js'

const CSS = `
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:1.2rem 2rem}
header h1{margin:0 0 .3rem;font-size:1.5rem}
header p{margin:.2rem 0;white-space:pre-line;color:#c9d1e0}
header a{color:#9cc4ff}
main{max-width:70rem;margin:0 auto;padding:1rem 2rem 3rem}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.4rem 1rem}
nav a,section a{color:#1a5fb4}
h2{border-bottom:2px solid #d5d9e0;padding-bottom:.2rem;margin-top:2rem}
article{background:#fff;border:1px solid #d5d9e0;border-radius:6px;margin:.8rem 0;padding:.6rem 1rem}
article h3{margin:.2rem 0;font-size:1rem;display:flex;flex-wrap:wrap;gap:.5rem;align-items:baseline}
.m{display:inline-block;min-width:4.2rem;text-align:center;border-radius:4px;color:#fff;font-size:.8rem;padding:.1rem .4rem}
.m-get{background:#2a7ab0}.m-post{background:#2f8f4e}.m-put{background:#b07a1a}.m-delete{background:#b03a2e}
.path,code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.name{color:#5b6475;font-weight:normal}
.badge{font-size:.75rem;border:1px solid #8a93a5;border-radius:10px;padding:0 .5rem;color:#3d4554}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:.5rem 0}
dt{font-weight:600;color:#3d4554}dd{margin:0}
table{border-collapse:collapse;margin:.3rem 0}
td,th{border:1px solid #d5d9e0;padding:.2rem .5rem;text-align:left;vertical-align:top}
pre{background:#f0f2f5;padding:.6rem;border-radius:4px;overflow:auto;font-size:.85rem;margin:.3rem 0}
details summary{cursor:pointer}
`.trim()

/** The inline stylesheet's CSP source (`'sha256-…'`). */
export const DOCS_STYLE_HASH = `'sha256-${createHash('sha256').update(CSS).digest('base64')}'`

/**
 * Content-Security-Policy of the docs page: nothing may load, only the one inline stylesheet applies,
 * no script at all.
 */
export const DOCS_CSP = `default-src 'none'; style-src ${DOCS_STYLE_HASH}; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c)
}

function anchor(kind: string, name: string): string {
  return `${kind}-${name.replace(/[^A-Za-z0-9_.-]/g, '_')}`
}

function componentOf(ref: unknown): string | undefined {
  if (typeof ref !== 'string' || !ref.startsWith(COMPONENT_PREFIX)) return undefined
  return ref.slice(COMPONENT_PREFIX.length).split('/')[0]?.replace(/~1/g, '/').replace(/~0/g, '~')
}

/** Component names referenced anywhere in `value`, in order of appearance. */
function refsIn(value: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) refsIn(item, out)
  else if (typeof value === 'object' && value !== null) {
    for (const [key, v] of Object.entries(value)) {
      if (key === '$ref') {
        const name = componentOf(v)
        if (name !== undefined) out.add(name)
      } else refsIn(v, out)
    }
  }
  return out
}

function schemaLink(name: string): string {
  return `<a href="#${escapeHtml(anchor('schema', name))}"><code>${escapeHtml(name)}</code></a>`
}

function renderSchema(schema: unknown): string {
  if (typeof schema === 'object' && schema !== null) {
    const keys = Object.keys(schema)
    if (keys.length === 0) return '<code>any</code>'
    const ref = (schema as Schema).$ref
    const name = componentOf(ref)
    if (keys.length === 1 && name !== undefined) return schemaLink(name)
  }
  const links = [...refsIn(schema)].map(schemaLink).join(', ')
  return `<pre>${escapeHtml(JSON.stringify(schema, null, 2))}</pre>${links ? `<div>uses ${links}</div>` : ''}`
}

function renderContent(content: unknown): string {
  if (typeof content !== 'object' || content === null) return ''
  return Object.entries(content as Record<string, Schema>)
    .map(([mediaType, media]) => {
      const item = media['x-trivium-item-schema']
      const body = item !== undefined ? `items: ${renderSchema(item)}` : renderSchema(media.schema)
      return `<div><code>${escapeHtml(mediaType)}</code> ${body}</div>`
    })
    .join('')
}

function renderRights(op: OpenApiOperation): string {
  const rows: string[] = []
  if (op['x-trivium-auth'] !== undefined) {
    const how = op.security && op.security.length > 0 ? ' (Bearer token or query <code>token</code>)' : ''
    rows.push(`<dt>auth</dt><dd>${escapeHtml(op['x-trivium-auth'])}${how}</dd>`)
  }
  if (op['x-trivium-permissions'])
    rows.push(
      `<dt>permissions (any of)</dt><dd>${op['x-trivium-permissions'].map((p) => `<code>${escapeHtml(p)}</code>`).join(', ')}</dd>`,
    )
  if (op['x-trivium-roles'])
    rows.push(
      `<dt>roles (any of)</dt><dd>${op['x-trivium-roles'].map((r) => `<code>${escapeHtml(r)}</code>`).join(', ')}</dd>`,
    )
  const limit = op['x-trivium-rate-limit']
  if (limit === false) rows.push('<dt>rate limit</dt><dd>none</dd>')
  else if (typeof limit === 'object' && limit !== null) {
    const requests = 'requests' in limit ? limit.requests : undefined
    const windowMs = 'windowMs' in limit ? limit.windowMs : undefined
    rows.push(`<dt>rate limit</dt><dd>${escapeHtml(requests)} requests per ${escapeHtml(windowMs)} ms</dd>`)
  }
  return rows.join('')
}

function renderParameters(parameters: Schema[] | undefined): string {
  if (!parameters || parameters.length === 0) return ''
  const rows = parameters
    .map(
      (p) =>
        `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${escapeHtml(p.in)}</td><td>${p.required ? 'yes' : 'no'}</td><td><code>${escapeHtml(JSON.stringify(p.schema))}</code></td></tr>`,
    )
    .join('')
  return `<dt>parameters</dt><dd><table><tr><th>name</th><th>in</th><th>required</th><th>schema</th></tr>${rows}</table></dd>`
}

function renderOperation(path: string, method: string, op: OpenApiOperation): string {
  const responses = Object.entries(op.responses)
  const success = responses.filter(([status]) => status.startsWith('2'))
  const errors = responses
    .filter(([status]) => !status.startsWith('2'))
    .map(([status]) => escapeHtml(status))
    .join(', ')
  const parts = [
    `<article id="${escapeHtml(anchor('op', op.operationId))}">`,
    `<h3><span class="m m-${escapeHtml(method)}">${escapeHtml(method.toUpperCase())}</span>`,
    `<span class="path">${escapeHtml(path)}</span> <span class="name">${escapeHtml(op.operationId)}</span>`,
    op['x-trivium-streaming'] ? '<span class="badge">streaming</span>' : '',
    '</h3>',
    op.summary !== undefined ? `<p>${escapeHtml(op.summary)}</p>` : '',
    '<dl>',
    renderRights(op),
    renderParameters(op.parameters),
    op.requestBody ? `<dt>request</dt><dd>${renderContent(op.requestBody.content)}</dd>` : '',
    ...success.map(
      ([status, r]) => `<dt>response ${escapeHtml(status)}</dt><dd>${renderContent(r.content)}</dd>`,
    ),
    `<dt>errors</dt><dd>${errors} (<a href="#${anchor('schema', 'ErrorBody')}"><code>ErrorBody</code></a>)</dd>`,
    '</dl>',
    '</article>',
  ]
  return parts.join('')
}

export interface DocsPageOptions {
  /** Link to the JSON document shown in the header. */
  documentPath?: string
}

/** The docs page of a document built by `buildOpenApi`. */
export function renderDocsPage(document: OpenApiDocument, options: DocsPageOptions = {}): string {
  const groups = new Map<string, { path: string; method: string; op: OpenApiOperation }[]>()
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const group = op.tags[0] ?? 'default'
      if (!groups.has(group)) groups.set(group, [])
      groups.get(group)?.push({ path, method, op })
    }
  }
  const groupNames = [...groups.keys()].sort()
  const nav = groupNames.map(
    (g) => `<li><a href="#${escapeHtml(anchor('group', g))}">${escapeHtml(g)}</a></li>`,
  )
  nav.push('<li><a href="#schemas">schemas</a></li>')
  const sections = groupNames.map((g) => {
    const ops = (groups.get(g) ?? []).sort((a, b) => a.op.operationId.localeCompare(b.op.operationId))
    return `<section id="${escapeHtml(anchor('group', g))}"><h2>${escapeHtml(g)}</h2>${ops
      .map(({ path, method, op }) => renderOperation(path, method, op))
      .join('')}</section>`
  })
  const schemas = Object.entries(document.components.schemas)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(
      ([name, schema]) =>
        `<details id="${escapeHtml(anchor('schema', name))}"><summary><code>${escapeHtml(name)}</code></summary>${renderSchema(schema)}</details>`,
    )
  const { info } = document
  const docLink = options.documentPath
    ? `<p><a href="${escapeHtml(options.documentPath)}">OpenAPI document (JSON)</a></p>`
    : ''
  return [
    '<!DOCTYPE html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(info.title)} ${escapeHtml(info.version)}</title>`,
    `<style>${CSS}</style>`,
    '</head><body>',
    `<header><h1>${escapeHtml(info.title)} <small>${escapeHtml(info.version)}</small></h1>`,
    info.description ? `<p>${escapeHtml(info.description)}</p>` : '',
    docLink,
    '</header><main>',
    `<nav><ul>${nav.join('')}</ul></nav>`,
    ...sections,
    `<section id="schemas"><h2>Schemas</h2>${schemas.join('')}</section>`,
    '</main></body></html>',
    '',
  ].join('\n')
}
