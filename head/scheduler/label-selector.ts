/**
 * Ray's label selector: `{ k: 'v' }` equals, `{ k: '!v' }` differs or is missing,
 * `{ k: 'in(a,b)' }` is one of, `{ k: '!in(a,b)' }` is none of (or missing). Every clause
 * must hold. Parsed once per request so matching a node is a few map look-ups.
 */
import { ConfigError } from '../../common/errors.js';
import type { LabelSelector } from '../../common/resources.js';

type Op = 'eq' | 'ne' | 'in' | 'notin';

interface Clause {
  key: string;
  op: Op;
  values: readonly string[];
}

export interface CompiledSelector {
  /** True for `{}`: every node matches. */
  readonly empty: boolean;
  /** The selector as users wrote it, for messages. */
  readonly text: string;
  matches(labels: Readonly<Record<string, string>>): boolean;
}

// Label values as Kubernetes and Ray allow them; anything else is a typo (a stray comma,
// an unbalanced parenthesis) that would otherwise silently never match.
const VALUE = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;

function malformed(key: string, value: unknown, why: string): ConfigError {
  return new ConfigError(
    `labelSelector key "${key}": ${why} (got ${JSON.stringify(value)}); write "v", "!v", "in(a,b)" or "!in(a,b)"`,
    { fields: { key, value: typeof value === 'string' ? value : String(value) } },
  );
}

function parseValue(key: string, raw: string, value: string): string {
  if (!VALUE.test(value)) throw malformed(key, raw, `"${value}" is not a valid label value`);
  return value;
}

function parseClause(key: string, raw: unknown): Clause {
  if (key.trim() === '') throw malformed(key, raw, 'the key is empty');
  if (typeof raw !== 'string') throw malformed(key, raw, 'the value must be a string');
  let body = raw.trim();
  const negated = body.startsWith('!');
  if (negated) body = body.slice(1).trim();
  if (body.startsWith('in(') || body.startsWith('in (')) {
    if (!body.endsWith(')')) throw malformed(key, raw, 'in(...) is not closed');
    const inner = body.slice(body.indexOf('(') + 1, -1);
    const values = inner.split(',').map((v) => parseValue(key, raw, v.trim()));
    return { key, op: negated ? 'notin' : 'in', values };
  }
  if (body === '') throw malformed(key, raw, 'the value is empty');
  return { key, op: negated ? 'ne' : 'eq', values: [parseValue(key, raw, body)] };
}

function holds(clause: Clause, labels: Readonly<Record<string, string>>): boolean {
  const value = Object.hasOwn(labels, clause.key) ? labels[clause.key] : undefined;
  switch (clause.op) {
    case 'eq':
      return value === clause.values[0];
    case 'ne':
      return value !== clause.values[0];
    case 'in':
      return value !== undefined && clause.values.includes(value);
    case 'notin':
      return value === undefined || !clause.values.includes(value);
  }
}

const MATCH_ALL: CompiledSelector = { empty: true, text: '{}', matches: () => true };

/** Throws ConfigError naming the key of the first malformed clause. */
export function compileLabelSelector(selector: LabelSelector | undefined): CompiledSelector {
  const keys = selector ? Object.keys(selector) : [];
  if (keys.length === 0) return MATCH_ALL;
  const clauses = keys.map((key) => parseClause(key, (selector as LabelSelector)[key]));
  return {
    empty: false,
    text: JSON.stringify(selector),
    matches: (labels) => {
      for (const clause of clauses) if (!holds(clause, labels)) return false;
      return true;
    },
  };
}

export function matchesLabels(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  return compileLabelSelector(selector).matches(labels);
}
