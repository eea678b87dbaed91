/**
 * What a PromQL expression reads, from the Prometheus project's own PromQL grammar
 * (@prometheus-io/lezer-promql): every series selector's metric name and the label names its
 * matchers use, or the syntax error.
 */
import { parser } from '@prometheus-io/lezer-promql';

export interface Selector {
  metric: string;
  labels: string[];
}

/** Grafana's built-in variables, replaced by what they expand to, so the query parses. */
export function expandGrafana(expr: string): string {
  return expr.replace(/\$__(rate_interval|interval|range)/g, '5m').replace(/\$\{?(\w+)\}?/g, '$1');
}

export function selectors(expr: string): { selectors: Selector[]; error?: string } {
  const tree = parser.parse(expr);
  const out: Selector[] = [];
  let error: string | undefined;
  tree.iterate({
    enter(node) {
      if (node.type.isError && error === undefined) {
        error = `syntax error at ${node.from}: …${expr.slice(Math.max(0, node.from - 20), node.from + 20)}…`;
      }
      if (node.name !== 'VectorSelector') return;
      const id = node.node.getChild('Identifier');
      const labels: string[] = [];
      const matchers = node.node.getChild('LabelMatchers');
      if (matchers) {
        const cursor = matchers.cursor();
        cursor.iterate((n) => {
          if (n.name === 'LabelName') labels.push(expr.slice(n.from, n.to));
        });
      }
      if (id) out.push({ metric: expr.slice(id.from, id.to), labels });
    },
  });
  return { selectors: out, error };
}
