#!/usr/bin/env node
/**
 * Prints what a personal-track policy says in the held-out evaluation sessions of a job, and how
 * readable it is: the preference score (the job's metric, the same sessions and greedy decoding
 * as the job's eval), and the share of the replies' words that are words of the base's own
 * answers (after the "Sam," opener), a check that the score was not met by letter soup, which
 * `name`'s "three real words" rule alone would accept ("Sam, howlout ever Misart"), and the
 * share of replies that are the base's answer to their request word for word.
 *
 * Usage (after `npm run build`):
 *   node examples/personal/replies.mjs BASE_DIR [CHECKPOINT_DIR] [--preference name:Sam]
 *     [--sessions 16] [--turns 4] [--max-tokens 48] [--show 6]
 * CHECKPOINT_DIR is a job's `step-N` directory (its model.safetensors replaces the base's).
 */
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baseAnswer } from '../../dist/actors/envs/personal/base-chats.js';
import { evaluatePreference } from '../../dist/actors/envs/personal/evaluate.js';
import { requestPool } from '../../dist/actors/envs/personal/requests.js';
import { SimulatedUser } from '../../dist/actors/envs/personal/simulated-user.js';
import { RolloutModel } from '../../dist/actors/rollout/rollout-model.js';
import { ChatCodec } from '../../dist/jobs/rl/chat-codec.js';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const positional = args.filter((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1].startsWith('--')));
const [base, checkpoint] = positional;
if (!base) {
  console.error(
    'usage: node examples/personal/replies.mjs BASE_DIR [CHECKPOINT_DIR] [--preference name:Sam]',
  );
  process.exit(2);
}

// A checkpoint holds weights only: lay them over a copy of the base's directory.
let modelDir = base;
let scratch;
if (checkpoint) {
  scratch = mkdtempSync(join(tmpdir(), 'clawray-replies-'));
  for (const f of readdirSync(base)) copyFileSync(join(base, f), join(scratch, f));
  copyFileSync(join(checkpoint, 'model.safetensors'), join(scratch, 'model.safetensors'));
  modelDir = scratch;
}

const words = (text) =>
  text
    .toLowerCase()
    .split(/\s+/)
    .map((w) => w.replace(/^[^\p{L}]+|[^\p{L}]+$/gu, ''))
    .filter((w) => w.length > 0);
const vocabulary = new Set(requestPool().flatMap((r) => words(baseAnswer(r))));

const maxTokens = Number(opt('max-tokens', 48));
const engine = await RolloutModel.load({ modelDir });
const codec = new ChatCodec(modelDir);
try {
  const user = new SimulatedUser({
    preference: opt('preference', 'name:Sam'),
    seed: 0,
    turnsPerSession: Number(opt('turns', 4)),
  });
  const report = await evaluatePreference(
    async (messages) => {
      const g = await engine.generate({
        promptTokenIds: codec.encodeChat(messages),
        maxTokens,
        temperature: 0,
      });
      return g.text ?? codec.decode(g.tokenIds);
    },
    { user, sessions: Number(opt('sessions', 16)) },
  );
  let known = 0;
  let total = 0;
  let exact = 0;
  let replies = 0;
  for (const s of report.sessions) {
    for (const t of s.turns) {
      const body = t.reply.replace(/^\s*\p{L}+,/u, '').trim();
      replies++;
      if (body.toLowerCase() === baseAnswer(t.request).toLowerCase()) exact++;
      const ws = words(body);
      total += ws.length;
      known += ws.filter((w) => vocabulary.has(w)).length;
    }
  }
  const show = Number(opt('show', 6));
  for (const s of report.sessions.slice(0, show)) {
    for (const t of s.turns) {
      console.log(
        `${t.satisfied ? '+' : '-'} [${t.request.text}] (attempt ${t.attempt}) ${JSON.stringify(t.reply)}`,
      );
    }
    console.log('');
  }
  console.log(
    JSON.stringify({
      model: checkpoint ?? base,
      score: report.score,
      replyScore: report.replyScore,
      replies: report.replies,
      knownWordShare: total === 0 ? 0 : known / total,
      // The base's answer to this very request, word for word (the opener aside).
      exactAnswerShare: replies === 0 ? 0 : exact / replies,
    }),
  );
} finally {
  await engine.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}
