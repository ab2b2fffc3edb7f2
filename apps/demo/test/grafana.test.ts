// The Grafana dashboard (issue 18) queries only metrics @trivium/metrics really exports, with their labels;
// issue 44: memory and event-loop panels from the process metrics the demo turns on (`defaultMetrics`).
import { readFileSync } from 'node:fs'
import { Instruments } from '@trivium/metrics'
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client'
import t from 'tap'

const dashboard = JSON.parse(readFileSync(new URL('../grafana/trivium.json', import.meta.url), 'utf8'))

t.test('every panel queries exported metrics and their labels', async (t) => {
  const registry = new Registry()
  new Instruments(registry, [0.1, 1])
  collectDefaultMetrics({ register: registry })
  const exported = new Map<string, Set<string>>()
  for (const metric of registry.getMetricsAsArray()) {
    const { name, labelNames } = metric as unknown as { name: string; labelNames: string[] }
    if (metric instanceof Histogram) {
      exported.set(`${name}_bucket`, new Set([...labelNames, 'le']))
      exported.set(`${name}_count`, new Set(labelNames))
      exported.set(`${name}_sum`, new Set(labelNames))
    } else exported.set(name, new Set(labelNames))
  }
  const titles = dashboard.panels.map((p: { title: string }) => p.title)
  t.same(titles, [
    'Calls per second by transport',
    'Latency p50 / p99 by transport',
    'Errors per second by code',
    'Denials: rate limit and authentication',
    'Open connections',
    'In flight: calls and streams',
    'Frames rejected and push',
    'PostgreSQL pool and Redis',
    'Memory: resident, heap, external',
    'Event-loop lag',
    'Active handles and requests',
  ])
  for (const panel of dashboard.panels) {
    for (const target of panel.targets) {
      const used = [...(target.expr as string).matchAll(/\b((?:trivium|nodejs|process)_[a-z0-9_]+)\b/g)].map(
        (m) => m[1]!,
      )
      t.ok(used.length > 0, `${panel.title}: queries a Trivium or process metric`)
      for (const name of used) {
        t.ok(exported.has(name), `${panel.title}: ${name} is exported`)
        const by =
          /by \(([^)]*)\)/
            .exec(target.expr)?.[1]
            ?.split(',')
            .map((s) => s.trim()) ?? []
        for (const label of by)
          t.ok(exported.get(name)?.has(label), `${panel.title}: ${name} has label ${label}`)
      }
    }
  }
})
