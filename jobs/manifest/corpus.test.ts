/**
 * The manifest corpus under test/fixtures/manifests. Each broken file states what must go wrong
 * in its header:
 *   # expect: LINE:COL fragment     a problem at file:LINE:COL whose text contains fragment
 *                                   (or every part of it, when parts are joined by " … ")
 *   # expect: --set EXPR fragment   a problem blamed on the override EXPR
 *   # set: EXPR                     an override passed as --set EXPR
 *   # cluster: two-node             plan the partition on TWO_NODES, a real head with two
 *                                   1-GPU nodes (the manifest itself is valid)
 * and exactly the expected problems must be reported, no more.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { packageRoot } from '../../common/package-root.js';
import { type PlanCluster, startPlanCluster } from '../../test/helpers/plan-cluster.js';
import { METHODS, type Method, TRACK_DEFAULTS } from './defaults.js';
import { checkManifestText, parseManifest } from './load.js';
import { planPartition } from './partition.js';

const FIXTURES = join(packageRoot(), 'test', 'fixtures', 'manifests');

/** Partitions are planned by a real head; messages name its nodes as `node-a`, `gpu-0`, …. */
let TWO_NODES: PlanCluster;
/** Room for every valid fixture: 2 nodes × 4 GPUs. */
let BIG_CLUSTER: PlanCluster;

beforeAll(async () => {
  [TWO_NODES, BIG_CLUSTER] = await Promise.all([
    startPlanCluster([
      { name: 'node-a', gpus: 1, cpus: 4, memoryMb: 16384 },
      { name: 'node-b', gpus: 1, cpus: 4, memoryMb: 16384 },
    ]),
    startPlanCluster([
      { name: 'gpu-0', gpus: 4, cpus: 32, memoryMb: 262144 },
      { name: 'gpu-1', gpus: 4, cpus: 32, memoryMb: 262144 },
    ]),
  ]);
});
afterAll(() => Promise.all([TWO_NODES?.stop(), BIG_CLUSTER?.stop()]));

interface Expectation {
  where: string;
  fragment: string;
}

function header(text: string) {
  const expects: Expectation[] = [];
  const sets: string[] = [];
  let cluster: string | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith('#')) break;
    const m = /^# (expect|set|cluster): (.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === 'set') sets.push(m[2]);
    else if (m[1] === 'cluster') cluster = m[2];
    else {
      const e = /^(--set \S+|\d+:\d+) (.*)$/.exec(m[2]);
      if (!e) throw new Error(`bad expect line: ${line}`);
      expects.push({ where: e[1], fragment: e[2] });
    }
  }
  return { expects, sets, cluster };
}

const brokenFiles = readdirSync(join(FIXTURES, 'broken'))
  .filter((f) => f.endsWith('.yaml'))
  .sort();
const validFiles = readdirSync(join(FIXTURES, 'valid'))
  .filter((f) => f.endsWith('.yaml'))
  .sort();

describe('broken manifests', () => {
  it('the corpus has at least 40 files', () => {
    expect(brokenFiles.length).toBeGreaterThanOrEqual(40);
  });

  it.each(brokenFiles)('%s', async (name) => {
    const label = `broken/${name}`;
    const text = readFileSync(join(FIXTURES, 'broken', name), 'utf8');
    const { expects, sets, cluster } = header(text);
    expect(expects.length, 'the file states what to expect').toBeGreaterThan(0);

    let lines: string[];
    if (cluster) {
      expect(cluster).toBe('two-node');
      const manifest = parseManifest(text, label, { set: sets });
      let caught: unknown;
      try {
        await planPartition(manifest, TWO_NODES.cluster);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ConfigError);
      lines = TWO_NODES.named((caught as ConfigError).message)
        .split('\n')
        .slice(1)
        .map((l) => l.trim());
    } else {
      const result = checkManifestText(text, label, { set: sets });
      expect(result.ok).toBe(false);
      lines = result.ok ? [] : result.problems.map((p) => p.text);
      // The thrown form carries the same lines and no stack in its message.
      expect(() => parseManifest(text, label, { set: sets })).toThrow(ConfigError);
    }

    for (const e of expects) {
      const prefix = e.where.startsWith('--set') ? `${e.where}: ` : `${label}:${e.where}: `;
      const parts = e.fragment.split(' … ');
      const hit = lines.find((l) => l.startsWith(prefix) && parts.every((part) => l.includes(part)));
      expect(hit, `no problem "${prefix}…${e.fragment}…" in:\n${lines.join('\n')}`).toBeDefined();
    }
    expect(lines.length, `unexpected problems:\n${lines.join('\n')}`).toBe(expects.length);
  });
});

describe('valid manifests', () => {
  it('cover every track with every method that fits it', () => {
    const pairs = new Set(validFiles.map((f) => basename(f, '.yaml').split('-').slice(0, 2).join('-')));
    for (const track of Object.keys(TRACK_DEFAULTS)) {
      for (const method of METHODS) {
        if (track === 'personal' && method === 'sft') continue;
        expect(pairs.has(`${track}-${method}`), `${track}-${method}.yaml`).toBe(true);
      }
    }
  });

  it.each(validFiles)('%s parses with every default filled and fits a 2 × 4-GPU cluster', async (name) => {
    const text = readFileSync(join(FIXTURES, 'valid', name), 'utf8');
    const manifest = parseManifest(text, `valid/${name}`);
    const [track, method] = basename(name, '.yaml').split('-') as [keyof typeof TRACK_DEFAULTS, Method];
    expect(manifest.spec.track).toBe(track);
    expect(manifest.spec.method).toBe(method);
    const { rollout, judge, train, env } = manifest.spec;
    for (const v of [
      rollout.batchSize,
      rollout.samplesPerPrompt,
      rollout.maxTurns,
      rollout.maxTokens,
      train.lr,
    ]) {
      expect(typeof v).toBe('number');
    }
    expect(judge.votes).toBeGreaterThanOrEqual(1);
    expect(train.maxStaleness).toBe(train.async ? (/maxStaleness/.test(text) ? train.maxStaleness : 1) : 0);
    if (track === 'personal') {
      expect(env).toBeUndefined();
      expect(manifest.spec.serve?.port).toBeGreaterThan(0);
    } else {
      expect(env?.parallel).toBeGreaterThanOrEqual(1);
      expect(judge.rule).toBe(TRACK_DEFAULTS[track].judgeRule);
    }
    if (method === 'opd' || method === 'combine') expect(judge.backend).toBe('llm');
    const plan = await planPartition(manifest, BIG_CLUSTER.cluster);
    expect(plan.groups.map((g) => g.role).sort()).toEqual(
      track === 'personal' ? ['judge', 'rollout', 'trainer'] : ['env', 'judge', 'rollout', 'trainer'],
    );
  });
});
