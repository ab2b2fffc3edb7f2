// `/admin/metrics`: a live view of the Prometheus metrics (calls per second per transport, p99 latency,
// errors per second), drawn in the browser from successive scrapes of /metrics. Two static responses
// (page and script) so the page runs under the app's `default-src 'self'` policy. /metrics answers
// operators only (operator.ts): the page asks for METRICS_TOKEN or an admin's access token and keeps it
// in memory only.
import type { FastifyInstance } from 'fastify'

export const METRICS_PAGE_PATH = '/admin/metrics'

const HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Trivium Tasks: live metrics</title>
<link rel="stylesheet" href="${METRICS_PAGE_PATH}.css"></head>
<body><h1>Live metrics</h1>
<form id="token-form" hidden><label>METRICS_TOKEN or an admin's access token <input id="token" type="password" autocomplete="off"></label>
<button>Use</button></form>
<p id="status">waiting for the first two scrapes…</p>
<section class="stats">
<div><h2>calls/s</h2><p>http <b id="rate-http">–</b> · websocket <b id="rate-websocket">–</b> · tcp <b id="rate-tcp">–</b></p></div>
<div><h2>p99</h2><p><b id="p99">–</b></p></div>
<div><h2>errors/s</h2><p><b id="errors">–</b></p></div>
</section>
<canvas id="calls" width="720" height="180"></canvas>
<canvas id="latency" width="720" height="120"></canvas>
<canvas id="errs" width="720" height="120"></canvas>
<script src="${METRICS_PAGE_PATH}.js"></script></body></html>`

const CSS = `body{font:14px system-ui,sans-serif;margin:2em;max-width:760px;color:#222}
canvas{display:block;border:1px solid #ddd;margin:1em 0;width:100%}.stats{display:flex;gap:2em}
h2{font-size:13px;margin:0;color:#666}b{font-size:20px}`

const SCRIPT = `'use strict'
const TRANSPORTS = ['http', 'websocket', 'tcp']
const COLORS = { http: '#1f77b4', websocket: '#2ca02c', tcp: '#d62728', p99: '#9467bd', errors: '#ff7f0e' }
const history = []
let previous
let token
function parse(text) {
  const calls = {}, errors = { n: 0 }, buckets = {}
  for (const t of TRANSPORTS) calls[t] = 0
  for (const line of text.split('\\n')) {
    let m = /^trivium_calls_total\\{(.*)\\} (\\S+)$/.exec(line)
    if (m) {
      const labels = Object.fromEntries([...m[1].matchAll(/(\\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]))
      if (labels.transport in calls) calls[labels.transport] += Number(m[2])
      if (labels.code !== 'OK') errors.n += Number(m[2])
      continue
    }
    m = /^trivium_call_duration_seconds_bucket\\{le="([^"]+)".*\\} (\\S+)$/.exec(line)
    if (m) buckets[m[1]] = (buckets[m[1]] || 0) + Number(m[2])
  }
  return { at: performance.now(), calls, errors: errors.n, buckets }
}
function p99(now, before) {
  const les = Object.keys(now.buckets).sort((a, b) => (a === '+Inf' ? 1 : b === '+Inf' ? -1 : a - b))
  const total = (now.buckets['+Inf'] || 0) - ((before.buckets || {})['+Inf'] || 0)
  if (total <= 0) return undefined
  for (const le of les) {
    if ((now.buckets[le] - (before.buckets[le] || 0)) >= 0.99 * total) return le === '+Inf' ? Infinity : Number(le)
  }
  return undefined
}
function draw(id, series, unit) {
  const canvas = document.getElementById(id), g = canvas.getContext('2d')
  g.clearRect(0, 0, canvas.width, canvas.height)
  let max = 0
  for (const s of series) for (const v of s.values) if (Number.isFinite(v)) max = Math.max(max, v)
  max = max || 1
  g.fillStyle = '#666'; g.font = '11px sans-serif'; g.fillText(max.toPrecision(3) + ' ' + unit, 4, 12)
  series.forEach((s, i) => {
    g.strokeStyle = s.color; g.beginPath()
    s.values.forEach((v, x) => {
      const px = canvas.width - (s.values.length - 1 - x) * (canvas.width / 59), py = canvas.height - (Number.isFinite(v) ? v / max : 0) * (canvas.height - 16)
      x === 0 ? g.moveTo(px, py) : g.lineTo(px, py)
    })
    g.stroke(); g.fillStyle = s.color; g.fillText(s.name, 80 + i * 90, 12)
  })
}
async function scrape() {
  const res = await fetch('/metrics', { headers: token ? { authorization: 'Bearer ' + token } : {} })
  if (res.status === 401 || res.status === 403) {
    document.getElementById('token-form').hidden = false
    document.getElementById('status').textContent = res.status === 401
      ? "/metrics needs METRICS_TOKEN or an admin's access token"
      : "that token is not an admin's: /metrics needs METRICS_TOKEN or an admin's access token"
    return
  }
  const now = parse(await res.text())
  if (previous) {
    const dt = (now.at - previous.at) / 1000
    const point = { errors: (now.errors - previous.errors) / dt, p99: p99(now, previous) }
    for (const t of TRANSPORTS) point[t] = (now.calls[t] - previous.calls[t]) / dt
    history.push(point); if (history.length > 60) history.shift()
    for (const t of TRANSPORTS) document.getElementById('rate-' + t).textContent = point[t].toFixed(1)
    document.getElementById('p99').textContent = point.p99 === undefined ? 'no calls' : point.p99 === Infinity ? '> largest bucket' : '≤ ' + point.p99 * 1000 + ' ms'
    document.getElementById('errors').textContent = point.errors.toFixed(2)
    document.body.dataset.scrapes = String(Number(document.body.dataset.scrapes || 0) + 1)
    document.getElementById('status').textContent = 'updated ' + new Date().toLocaleTimeString()
    draw('calls', TRANSPORTS.map((t) => ({ name: t, color: COLORS[t], values: history.map((p) => p[t]) })), 'calls/s')
    draw('latency', [{ name: 'p99', color: COLORS.p99, values: history.map((p) => (p.p99 === undefined ? NaN : p.p99)) }], 's')
    draw('errs', [{ name: 'errors/s', color: COLORS.errors, values: history.map((p) => p.errors) }], 'errors/s')
  }
  previous = now
}
document.getElementById('token-form').addEventListener('submit', (e) => {
  e.preventDefault(); token = document.getElementById('token').value; e.target.hidden = true; previous = undefined
})
const every = Number(new URLSearchParams(location.search).get('every')) || 2000
scrape(); setInterval(() => scrape().catch((err) => { document.getElementById('status').textContent = String(err) }), every)
`

export function metricsPage(app: FastifyInstance): void {
  app.get(METRICS_PAGE_PATH, async (_req, reply) => reply.type('text/html; charset=utf-8').send(HTML))
  app.get(`${METRICS_PAGE_PATH}.js`, async (_req, reply) =>
    reply.type('text/javascript; charset=utf-8').send(SCRIPT),
  )
  app.get(`${METRICS_PAGE_PATH}.css`, async (_req, reply) => reply.type('text/css; charset=utf-8').send(CSS))
}
