import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../common/errors.js';
import { contentToText } from '../../judge/prompts.js';
import { splitOf } from '../track.js';
import { evaluatePreference, preferenceScore } from './evaluate.js';
import { allPreferences, makePreference, satisfyingReply } from './preferences.js';
import { ReactionJudge } from './reaction-judge.js';
import { requestPool } from './requests.js';
import { EMPTY_REPLY_REMARK, PRAISE_PHRASES, SimulatedUser } from './simulated-user.js';
import { type AgentFn, runSession } from './user-session.js';

const signoff = makePreference('signoff');
const always: AgentFn = async () => satisfyingReply(signoff, 'Call it Felix.');
const never: AgentFn = async () => 'Call it Felix.';
/** Meets the preference on every other reply: exercises both kinds of reaction. */
function alternating(): AgentFn {
  let n = 0;
  return async () => (n++ % 2 === 0 ? 'Call it Felix.' : 'Call it Felix. -- ok');
}

describe('request pool', () => {
  it('is fixed, short, unique, and split by the tracks’ hash rule', () => {
    const pool = requestPool();
    expect(pool.length).toBeGreaterThanOrEqual(90);
    expect(new Set(pool.map((r) => r.id)).size).toBe(pool.length);
    expect(new Set(pool.map((r) => r.text)).size).toBe(pool.length);
    for (const r of pool) expect(r.text.length).toBeLessThanOrEqual(80);
    const heldout = pool.filter((r) => r.split === 'heldout').length;
    expect(heldout).toBeGreaterThanOrEqual(12);
    expect(heldout).toBeLessThan(pool.length / 3);
    const user = new SimulatedUser({ preference: 'lowercase' });
    const train = new Set(user.requests.map((r) => r.text));
    for (const r of user.withSplit('heldout').requests) expect(train.has(r.text)).toBe(false);
  });
});

describe('SimulatedUser', () => {
  it('runs the same script for the same seed, and another one for another seed', async () => {
    const play = async (seed: number) => {
      const user = new SimulatedUser({ preference: 'signoff', seed });
      const out = [];
      for (let i = 0; i < 3; i++) out.push((await runSession(user.openSession(), alternating())).messages);
      return out;
    };
    expect(await play(5)).toEqual(await play(5));
    expect(await play(5)).not.toEqual(await play(6));
    // A session's script depends on its number only, not on what was opened before.
    const user = new SimulatedUser({ preference: 'signoff', seed: 5 });
    const third = await runSession(user.openSession(2), alternating());
    expect(third.messages).toEqual((await play(5))[2]);
    expect(third.sessionId).toBe('simuser-5-train-2');
  });

  it('follows a satisfying reply with thanks and the next request, a miss with a correction', () => {
    const user = new SimulatedUser({ preference: 'signoff', seed: 1, turnsPerSession: 4, maxAttempts: 2 });
    const first = user.start();
    const session = user.current!;
    expect(first).toBe(session.request.text);

    const good = user.react('Felix. -- ok');
    expect(good).toMatchObject({ satisfied: true, done: false, kind: 'follow-up' });
    expect(PRAISE_PHRASES.some((p) => good.nextMessage.startsWith(p))).toBe(true);
    expect(good.request).not.toBeNull();
    expect(good.nextMessage.endsWith(good.request!.text)).toBe(true);

    const miss = user.react('Rice.');
    expect(miss).toMatchObject({ satisfied: false, done: false, kind: 'correction' });
    expect(signoff.corrections.some((c) => miss.nextMessage.startsWith(c))).toBe(true);
    expect(miss.request).toBe(good.request); // a redo of the same request
    expect(miss.reason).toBe("does not end with '-- ok'");

    const again = user.react('Rice, again.');
    expect(again.kind).toBe('correction');
    // Out of attempts: the user corrects, then moves on to a new request.
    expect(again.request).not.toBe(good.request);
    expect(again.nextMessage.endsWith(again.request!.text)).toBe(true);

    const last = user.react('');
    expect(last).toMatchObject({ satisfied: false, done: true, kind: 'correction', request: null });
    expect(last.nextMessage.startsWith(EMPTY_REPLY_REMARK)).toBe(true);
    expect(() => user.react('more')).toThrow(/done/);

    expect(session.turns.map((t) => [t.attempt, t.satisfied])).toEqual([
      [1, true],
      [1, false],
      [2, false],
      [1, false],
    ]);
    expect(session.score).toBe(0.25);
    // The conversation alternates user / assistant and ends with the user's last reaction.
    expect(session.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
    ]);
    expect(session.messages.at(-1)?.content).toBe(last.nextMessage);
  });

  it('ends a session after K replies, saying goodbye when the last one was right', async () => {
    const user = new SimulatedUser({ preference: 'signoff', turnsPerSession: 3 });
    const result = await runSession(user.openSession(), always);
    expect(result.replies).toBe(3);
    expect(result.turns.map((t) => t.request.id)).toHaveLength(3);
    expect(new Set(result.turns.map((t) => t.request.id)).size).toBe(3);
    expect(result.messages.at(-1)?.content).toMatch(/that's all|everything|bye/i);
    expect(() => user.openSession(-1)).toThrow(RangeError);
  });

  it('rejects bad settings', () => {
    expect(() => new SimulatedUser({ preference: 'signoff', turnsPerSession: 0 })).toThrow(ConfigError);
    expect(() => new SimulatedUser({ preference: 'nope' })).toThrow(ConfigError);
    // One custom request lands in one split: the other has nothing to ask.
    const other = splitOf('only one') === 'train' ? 'heldout' : 'train';
    expect(() => new SimulatedUser({ preference: 'signoff', requests: ['only one'], split: other })).toThrow(
      /no (train|heldout) requests/,
    );
  });
});

describe('preference score', () => {
  it('is 1 for an agent that always meets the preference and 0 for one that never does', async () => {
    const user = new SimulatedUser({ preference: 'signoff', seed: 2 });
    expect(await preferenceScore(always, { user, sessions: 6 })).toBe(1);
    expect(await preferenceScore(never, { user, sessions: 6 })).toBe(0);
    for (const p of allPreferences()) {
      const agent: AgentFn = async (messages) =>
        satisfyingReply(p, `answer to ${contentToText(messages.at(-1)?.content).length} chars`);
      expect(await preferenceScore(agent, { user: new SimulatedUser({ preference: p }), sessions: 2 })).toBe(
        1,
      );
    }
  });

  it('scores held-out sessions, the same for every run and concurrency', async () => {
    const user = new SimulatedUser({ preference: 'signoff', seed: 9 });
    const seen = new Set<string>();
    const agent: AgentFn = async (messages) => {
      seen.add(String(messages[0].content));
      return messages.length === 1 ? 'Felix -- ok' : 'Felix';
    };
    const a = await evaluatePreference(agent, { user, sessions: 8 });
    const b = await evaluatePreference(agent, { user, sessions: 8, concurrency: 4 });
    expect(b.score).toBe(a.score);
    expect(b.replyScore).toBe(a.replyScore);
    expect(b.sessions.map((s) => s.messages)).toEqual(a.sessions.map((s) => s.messages));
    expect(a.replies).toBe(8 * user.turnsPerSession);
    expect(a.replyScore).toBe(0.25);
    expect(a.split).toBe('heldout');
    const heldout = new Set(
      requestPool()
        .filter((r) => r.split === 'heldout')
        .map((r) => r.text),
    );
    for (const first of seen) expect(heldout.has(first)).toBe(true);
    // Only each session's first reply is satisfied; redos count among the replies, not the requests.
    expect(a.requests).toBeLessThan(a.replies);
    expect(a.score).toBe(8 / a.requests);
  });

  it('counts a request by its first reply: heeding a correction is not a learned preference', async () => {
    const user = new SimulatedUser({ preference: 'name:Sam', seed: 3 });
    // Answers plainly unless the user's last message asks for the name, then obeys it.
    const heeds: AgentFn = async (messages) => {
      const last = contentToText(messages.at(-1)?.content);
      return /Sam/.test(last) && !/thank/i.test(last) ? 'Sam, here you go.' : 'Here you go.';
    };
    const r = await evaluatePreference(heeds, { user, sessions: 8 });
    expect(r.score).toBe(0);
    expect(r.replyScore).toBeGreaterThan(0.2);
  });
});

describe('ReactionJudge', () => {
  it('reads the next state as an OpenClaw-RL judge would: corrections −1 (with a hint in OPD), thanks +1', async () => {
    for (const p of allPreferences()) {
      const judge = new ReactionJudge(p);
      const user = new SimulatedUser({ preference: p, seed: 4, turnsPerSession: 6 });
      let n = 0;
      const result = await runSession(user.openSession(), async () =>
        n++ % 3 === 0 ? satisfyingReply(p) : 'Here Is A Plain Answer That Goes On For Quite A Few Words.',
      );
      for (const t of result.turns) {
        const prm = judge.judge(t.reaction);
        expect(prm.score, `${p.name}: ${t.reaction}`).toBe(t.satisfied ? 1 : -1);
        const opd = judge.judge(t.reaction, 'opd');
        expect(opd).toEqual(
          t.satisfied
            ? { evidence: 'positive', score: -1, hint: null }
            : {
                evidence: 'negative',
                score: 1,
                hint: p.hint,
              },
        );
      }
    }
    const judge = new ReactionJudge('lowercase', { mode: 'opd' });
    const vote = await judge.vote({
      messages: [{ role: 'user', content: 'Suggest a name for my cat.' }],
      response: 'Felix',
      nextState: { role: 'user', content: 'Again, all lowercase please. Try again.' },
    });
    expect(vote).toMatchObject({ score: 1, hint: judge.preference.hint, backend: 'rule' });
    expect(judge.judge(null, 'prm').score).toBe(0);
    expect(judge.judge('What is the weather?', 'prm').score).toBe(0);
  });
});
