/**
 * The personal track's base-policy builder end to end, at a reduced size: a random tiny model
 * fine-tuned by clawray's SFT step on generated chats of one request template, written as a
 * model directory, and served by the rollout engine, answers a held-out request of that
 * template in words (the random model's reply has none), and under the OPD name hint opens
 * with the name: what makes the model under the hint a teacher. The full base (every template,
 * 500 steps, corrected sessions) is built by examples/personal/make-base.mjs and measured by hand.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makePreference, realWords } from '../actors/envs/personal/preferences.js';
import { initRandomModel } from '../actors/models/model-init.js';
import { buildPersonalBase, PERSONAL_BASE_FILE, sampleBaseReplies } from '../jobs/rl/personal-base.js';

const dir = mkdtempSync(join(tmpdir(), 'clawray-personal-base-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('personal base policy', () => {
  it('a small SFT run on generated chats turns a random model into one that answers in words', async () => {
    const random = join(dir, 'random');
    initRandomModel({ preset: 'tiny', outDir: random, seed: 0 });
    const before = await sampleBaseReplies(random, { count: 1, maxTokens: 48 });

    const out = join(dir, 'base');
    const result = await buildPersonalBase({
      outDir: out,
      steps: 80,
      batchSize: 8,
      lr: 1e-2,
      chats: { templates: ['name'], turnsPerSession: 1, sessions: 16, hintShare: 0.5, names: ['Sam'] },
      logEvery: 20,
    });
    expect(result.lossEnd).toBeLessThan(result.lossStart);
    expect(existsSync(join(out, 'config.json'))).toBe(true);
    const recipe = JSON.parse(readFileSync(join(out, PERSONAL_BASE_FILE), 'utf8'));
    expect(recipe).toMatchObject({ preset: 'tiny', seed: 0, steps: 80 });
    await expect(buildPersonalBase({ outDir: out, steps: 1 })).rejects.toThrow(/already holds a model/);

    const after = await sampleBaseReplies(out, { count: 1, maxTokens: 48 });
    console.log('random:', before, 'base:', after);
    const [plainBefore] = before;
    const [plain, hinted] = after;
    expect(realWords(plainBefore.reply)).toBeLessThan(3);
    expect(realWords(plain.reply)).toBeGreaterThanOrEqual(3);
    expect(plain.reply.startsWith('Sam,')).toBe(false);
    // Under the OPD hint it writes the preferred reply: what makes it a teacher.
    expect(makePreference('name:Sam').check(hinted.reply).ok).toBe(true);
    // About 25 s of CPU (80 SFT steps); more wall time when the machine is shared.
  }, 180_000);
});
