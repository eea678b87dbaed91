/**
 * A terminal episode's reward reaches the trainer: the records carry the test counts of the
 * environment's real test run, and the track's default rule (tests-passed) turns them into the
 * outcome. (Without the counts every terminal episode was judged 0 and GRPO never had a signal.)
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Action } from '../../actors/envs/environment.js';
import { TerminalEnvironment } from '../../actors/envs/terminal/env.js';
import type { TerminalTask } from '../../actors/envs/terminal/task.js';
import { JudgePanel } from '../../actors/judge/judge-panel.js';
import { JudgeVoter } from '../../actors/judge/judge-voter.js';
import { parseTrajectoryRecord } from '../buffer/types.js';
import type { Episode } from './episodes.js';
import { judgeEpisode } from './judging.js';
import { episodeRecords } from './records.js';

const task: TerminalTask = {
  id: 'save-1',
  split: 'train',
  oracle: [],
  instruction: 'Save 145 to f91.txt.',
  runTests:
    '#!/bin/sh\ncd /workspace\n[ "$(cat f91.txt 2>/dev/null)" = 145 ] && echo "PASSED t.py::test_a" || echo "FAILED t.py::test_a"\necho "PASSED t.py::test_b"\n',
  testFiles: {},
};
const env = new TerminalEnvironment({ tasks: [task], maxParseErrors: 0 });
afterAll(() => env.close());

const shell = (command: string): Action => ({
  content: null,
  tool_calls: [
    { id: 'c1', type: 'function', function: { name: 'shell_exec', arguments: JSON.stringify({ command }) } },
  ],
});

/** Plays the actions in the real sandbox and wraps the result as the driver's episode. */
async function play(actions: Action[]): Promise<Episode> {
  await env.reset(task.id);
  let last: Awaited<ReturnType<TerminalEnvironment['step']>> | undefined;
  const turns = [];
  for (const action of actions) {
    last = await env.step(action);
    turns.push({
      messages: [],
      promptTokenIds: [1],
      tokenIds: [2],
      logprobs: [-0.1],
      weightVersion: 0,
      action,
    });
    if (last.done) break;
  }
  return {
    taskId: task.id,
    turns,
    reward: last!.reward,
    done: last!.done,
    info: last!.info,
    messages: last!.observation.messages,
  };
}

const asked = { maxTokens: 8, temperature: 1, topP: 1, seed: 3 };

const outcome = async (episode: Episode) => {
  const records = episodeRecords(episode, task, { group: 0, index: 0 }, 4, 'job-1', asked);
  const panel = new JudgePanel([new JudgeVoter({ backend: 'rule', rule: 'tests-passed' })], { votes: 1 });
  const judged = await judgeEpisode(
    records,
    { panel, kind: 'episode', opd: false, prm: true, teacher: async () => [], encodeChat: () => [] },
    records.at(-1)!.task!.reference,
  );
  return judged.map((r) => r.judgement?.reward);
};

describe('terminal episode records', () => {
  it('carry the test counts, so tests-passed scores 2·passed/total − 1', async () => {
    const solved = await play([shell('echo 145 > f91.txt'), { content: 'Done.' }]);
    expect(await outcome(solved)).toEqual([1, 1]);
    const half = await play([shell('echo 146 > f91.txt'), { content: 'Done.' }]);
    expect(half.info).toMatchObject({ tests: { passed: 1, total: 2 } });
    expect(await outcome(half)).toEqual([0, 0]);
  });

  it("falls back to the environment's −1 when malformed calls ended the episode before any test ran", async () => {
    const broken = await play([
      {
        content: null,
        tool_calls: [{ id: 'x', type: 'function', function: { name: 'nope', arguments: '{}' } }],
      },
    ]);
    expect(broken.info).toMatchObject({ endReason: 'parse_errors' });
    expect(await outcome(broken)).toEqual([-1]);
  });

  it('are valid typed records: the sampling the engine reported (else what was asked), group, episode, task', async () => {
    const episode = await play([shell('echo 145 > f91.txt'), { content: 'Done.' }]);
    episode.turns[0].sampling = { temperature: 0.6, topP: 0.95, topK: 20, seed: 11 };
    episode.customReward = Number.NaN;
    const records = episodeRecords(episode, task, { group: 2, index: 3 }, 4, 'job-1', asked);
    for (const r of records) expect(parseTrajectoryRecord(r)).toEqual(r);
    expect(records.map((r) => r.sampling)).toEqual([
      { temperature: 0.6, topP: 0.95, topK: 20, seed: 11 },
      { temperature: 1, topP: 1, topK: null, seed: 3 },
    ]);
    expect(records.map((r) => [r.group, r.episode.id, r.episode.turns])).toEqual([
      [{ id: 'g2', size: 4, index: 3 }, 'job-1-g2-e3', 2],
      [{ id: 'g2', size: 4, index: 3 }, 'job-1-g2-e3', 2],
    ]);
    expect(records.map((r) => r.episode.finalMessages === null)).toEqual([true, false]);
    expect(records[0].task).toEqual({
      id: task.id,
      // A plugin's NaN is kept as null: its group is dropped, not trained.
      reference: { reward: 1, custom: null, testsPassed: 2, testsTotal: 2 },
    });
    expect(records.every((r) => r.judgement === null && r.teacher === null && r.requestId === null)).toBe(
      true,
    );
  });
});
