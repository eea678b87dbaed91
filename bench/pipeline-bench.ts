/**
 * Samples/s of one RL job run asynchronously (rollouts of the next batch overlap training,
 * staleness ≤ 1) and synchronously (the same job with async: false), on a local cluster: the
 * toolcall example's tasks and chat template, a tiny model, and a reward plugin that gives
 * every group a learning signal so each step really trains (a random policy earns −1
 * everywhere, which would leave the trainer nothing to do).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Cluster } from '../actors/runtime/cluster.js';
import { silentLogger } from '../common/logger.js';
import { packageRoot } from '../common/package-root.js';
import { parseManifest } from '../jobs/manifest/load.js';
import { RLPipeline } from '../jobs/pipeline/rl-pipeline.js';
import { LocalCluster } from '../local/local-cluster.js';

const STEPS = 6;

function manifest(name: string, async: boolean, examples: string): string {
  return `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: ${name} }
spec:
  track: toolcall
  method: rl
  model: { path: ./model, init: { preset: tiny }, chatTemplate: ${join(examples, 'chat_template.jinja')} }
  rollout: { batchSize: 4, samplesPerPrompt: 4, maxTurns: 2, maxTokens: 48 }
  train: { steps: ${STEPS}, lr: 1.0e-4, async: ${async}${async ? ', maxStaleness: 1' : ''} }
  env:
    tasks: ${join(examples, 'tasks.jsonl')}
    parallel: 8
    settings: { tools: [calculator], systemPrompt: Use the calculator., maxTurns: 2 }
  eval: { everySteps: 0 }
  checkpoint: { everySteps: 0 }
  plugins: { reward: ./reward.mjs }
`;
}

export async function runPipelineBench(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'clawray-bench-pipeline-'));
  const examples = resolve(packageRoot(), 'examples', 'toolcall');
  writeFileSync(
    join(dir, 'reward.mjs'),
    'export default ({ messages }) => (JSON.stringify(messages).length % 2 ? 1 : -1);\n',
  );
  const local = await LocalCluster.start({ workers: 1, logger: silentLogger });
  const cluster = await Cluster.connect({ address: local.address, token: local.token });
  const results: Record<string, number> = {};
  try {
    for (const mode of ['sync', 'async'] as const) {
      const m = parseManifest(manifest(`bench-${mode}`, mode === 'async', examples), `${mode}.yaml`);
      const pipeline = new RLPipeline({
        cluster,
        manifest: m,
        workingDir: dir,
        dataDir: dir,
        jobId: `bench-${mode}`,
        logger: silentLogger,
        log: (line) => process.stderr.write(`[${mode}] ${line}\n`),
      });
      const summary = await pipeline.run();
      results[`${mode}SamplesPerSec`] = Number(summary.samplesPerSecond.toFixed(3));
      results[`${mode}TrainerIdleRatio`] = Number(summary.trainerIdleRatio.toFixed(3));
      results[`${mode}RolloutIdleRatio`] = Number(summary.rolloutIdleRatio.toFixed(3));
    }
  } finally {
    await cluster.close();
    await local.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    bench: 'pipeline',
    steps: STEPS,
    ...results,
    asyncOverSync: Number((results.asyncSamplesPerSec / results.syncSamplesPerSec).toFixed(2)),
    target: 2.5,
  };
}
