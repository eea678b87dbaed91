/**
 * Samples/s of one RL job run asynchronously (rollouts of the next batches overlap training,
 * staleness ≤ 2) and synchronously (the same job with async: false), on a local cluster with a
 * tiny model, in two regimes:
 *
 * - `agentic`: every environment step waits ENV_STEP_MS, as a browser action, a remote tool or
 *   a test run does (the episodes of OpenClaw-RL's GUI/SWE/terminal tracks are bound by such
 *   waits, not by the policy's tokens). An environment plugin plays this; it is the headline.
 * - `compute`: the toolcall track's own calculator environment, which answers at once, so the
 *   job is bound by the 2 CPU cores that generation and training share.
 *
 * A reward plugin gives every group a learning signal so each step really trains (a random
 * policy earns −1 everywhere, which would leave the trainer nothing to do).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { silentLogger } from '../common/logger.js';
import { packageRoot } from '../common/package-root.js';
import { MemoryTrajectoryBuffer } from '../jobs/buffer/memory-buffer.js';
import { parseManifest } from '../jobs/manifest/load.js';
import { RLDriver } from '../jobs/rl/driver.js';
import { LocalCluster } from '../local/local-cluster.js';
import { Cluster } from '../runtime/index.js';

const STEPS = 6;
const ENV_STEP_MS = 1500;
const BATCH = 4;
const SAMPLES_PER_PROMPT = 4;
const MAX_STALENESS = 2;

type Regime = 'agentic' | 'compute';

function manifest(regime: Regime, async: boolean, examples: string): string {
  const plugins =
    regime === 'agentic' ? 'reward: ./reward.mjs, environment: ./slow-env.mjs' : 'reward: ./reward.mjs';
  // Enough episode slots for every group the staleness bound lets start at once.
  const parallel = BATCH * SAMPLES_PER_PROMPT * (MAX_STALENESS + 1);
  return `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: bench-${regime}-${async ? 'async' : 'sync'} }
spec:
  track: toolcall
  method: rl
  model: { path: ./model, init: { preset: tiny }, chatTemplate: builtin:compact-tools }
  rollout: { batchSize: ${BATCH}, samplesPerPrompt: ${SAMPLES_PER_PROMPT}, maxTurns: 2, maxTokens: 48 }
  train: { steps: ${STEPS}, lr: 1.0e-4, async: ${async}${async ? `, maxStaleness: ${MAX_STALENESS}` : ''} }
  env:
    tasks: ${join(examples, 'tasks.jsonl')}
    parallel: ${parallel}
    settings: { tools: [calculator], systemPrompt: Use the calculator., maxTurns: 2 }
  eval: { everySteps: 0 }
  checkpoint: { everySteps: 0 }
  plugins: { ${plugins} }
`;
}

/** Two turns per episode, each answered after ENV_STEP_MS. */
const SLOW_ENV = `const wait = (ms) => new Promise((r) => setTimeout(r, ms));
export default () => {
  let messages = [];
  return {
    async reset(id) { messages = [{ role: 'user', content: 'Task ' + id + ': reply twice.' }]; return { messages, text: '', tools: [] }; },
    async step(action) {
      await wait(${ENV_STEP_MS});
      messages = [...messages, { role: 'assistant', content: action.content ?? '' }, { role: 'user', content: 'Again.' }];
      const done = messages.length >= 5;
      return { observation: { messages, text: '', tools: [] }, reward: done ? 1 : 0, done, info: {} };
    },
    async evaluate() { return { reward: 0, info: {} }; },
    async close() {},
  };
};
`;

export async function runPipelineBench(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'clawray-bench-pipeline-'));
  const examples = resolve(packageRoot(), 'examples', 'toolcall');
  writeFileSync(
    join(dir, 'reward.mjs'),
    'export default ({ messages }) => (JSON.stringify(messages).length % 2 ? 1 : -1);\n',
  );
  writeFileSync(join(dir, 'slow-env.mjs'), SLOW_ENV);
  const local = await LocalCluster.start({ workers: 1, logger: silentLogger });
  const cluster = await Cluster.connect({ address: local.address, token: local.token });
  const results: Record<string, number> = {};
  try {
    for (const regime of ['agentic', 'compute'] as const) {
      for (const mode of ['sync', 'async'] as const) {
        const m = parseManifest(manifest(regime, mode === 'async', examples), `${regime}-${mode}.yaml`);
        const driver = new RLDriver({
          cluster,
          manifest: m,
          workingDir: dir,
          dataDir: dir,
          submissionId: `bench-${regime}-${mode}`,
          buffers: {
            rollouts: new MemoryTrajectoryBuffer({ name: 'rollouts' }),
            judged: new MemoryTrajectoryBuffer({ name: 'judged' }),
          },
          logger: silentLogger,
          log: (line) => process.stderr.write(`[${regime} ${mode}] ${line}\n`),
        });
        const summary = await driver.run();
        results[`${regime}${cap(mode)}SamplesPerSec`] = round(summary.samplesPerSecond);
        results[`${regime}${cap(mode)}TrainerIdleRatio`] = round(summary.trainerIdleRatio);
        results[`${regime}${cap(mode)}RolloutIdleRatio`] = round(summary.rolloutIdleRatio);
      }
    }
  } finally {
    await cluster.close();
    await local.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    bench: 'pipeline',
    steps: STEPS,
    envStepMs: ENV_STEP_MS,
    maxStaleness: MAX_STALENESS,
    ...results,
    asyncOverSync: round(results.agenticAsyncSamplesPerSec / results.agenticSyncSamplesPerSec, 2),
    computeAsyncOverSync: round(results.computeAsyncSamplesPerSec / results.computeSyncSamplesPerSec, 2),
    target: 2.5,
  };
}

const cap = (s: string) => s[0].toUpperCase() + s.slice(1);
const round = (x: number, digits = 3) => Number(x.toFixed(digits));
