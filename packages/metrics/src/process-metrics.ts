// prom-client's default metrics (process_*, nodejs_*: memory, CPU, event-loop lag, handles, GC), collected
// once per process and registered into each app's registry that asks for them. prom-client's
// `collectDefaultMetrics` starts process-wide observers it never stops (a GC PerformanceObserver, an
// event-loop delay monitor): called per app, every app created in a process (tests, in-process restarts)
// would add another pair for the process's life, each holding its registry.
import { collectDefaultMetrics, type Metric, Registry } from 'prom-client'

let shared: { name: string; metric: Metric }[] | undefined

/** Adds the process metrics to `registry`, except the names it already has (e.g. a host's own collection). */
export function registerProcessMetrics(registry: Registry): void {
  if (shared === undefined) {
    const own = new Registry()
    collectDefaultMetrics({ register: own })
    shared = own.getMetricsAsArray().flatMap(({ name }) => {
      const metric = own.getSingleMetric(name)
      return metric === undefined ? [] : [{ name, metric }]
    })
  }
  for (const { name, metric } of shared)
    if (registry.getSingleMetric(name) === undefined) registry.registerMetric(metric)
}
