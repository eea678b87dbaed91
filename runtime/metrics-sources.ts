/**
 * Extra metrics an actor hands to its node's `/metrics`: each source returns prom-client
 * metric JSON (`registry.getMetricsAsJSON()` shape), added to the actor process's own on every
 * scrape. A job's supervisor uses it for its driver, which is a plain process, not an actor.
 */
export type MetricsSource = () => Promise<unknown[]> | unknown[];

const sources = new Set<MetricsSource>();

/** Adds `source`; returns a function that removes it. */
export function addMetricsSource(source: MetricsSource): () => void {
  sources.add(source);
  return () => sources.delete(source);
}

/** Every source's metrics; a source that fails contributes nothing to this scrape. */
export async function collectMetricsSources(): Promise<unknown[]> {
  const parts = await Promise.all(
    [...sources].map(async (s) => {
      try {
        return await s();
      } catch {
        return [];
      }
    }),
  );
  return parts.flat();
}
