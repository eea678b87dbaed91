import * as tf from '@tensorflow/tfjs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { selectBackend, type TfjsBackendName } from '../models/tfjs-backend.js';
import { tokenLogprobs } from '../models/tfjs-decoder.js';
import {
  entropyFromLogits,
  klK3,
  klPerToken,
  maskedMean,
  ppoClipLoss,
  rlLoss,
  sequenceMean,
  sftLoss,
  topKDistillationLoss,
  topKKlPerToken,
  truncatedImportanceWeights,
} from './rl-index.js';

const ln = Math.log;
let initialBackend: string;
let tensorsBefore = 0;

beforeAll(async () => {
  initialBackend = tf.getBackend();
  await selectBackend('cpu');
});
afterAll(async () => {
  if (initialBackend !== undefined && initialBackend !== tf.getBackend()) {
    await selectBackend(initialBackend as TfjsBackendName);
  }
});
beforeEach(() => {
  tensorsBefore = tf.memory().numTensors;
});
afterEach(() => {
  // every test disposes what it creates: no tensor may leak from the losses
  expect(tf.memory().numTensors).toBe(tensorsBefore);
});

function scalar(fn: () => tf.Scalar): number {
  const t = fn();
  const v = t.dataSync()[0];
  t.dispose();
  return v;
}

function values(t: tf.Tensor): number[] {
  const v = Array.from(t.dataSync());
  t.dispose();
  return v;
}

describe('maskedMean / sequenceMean', () => {
  it('reduce ragged masks', () => {
    tf.tidy(() => {
      const x = tf.tensor2d([
        [1, 2, 3],
        [10, 99, 99],
        [7, 7, 7],
      ]);
      const mask = tf.tensor2d([
        [1, 1, 1],
        [1, 0, 0],
        [0, 0, 0],
      ]);
      // token mean: (1 + 2 + 3 + 10) / 4 = 4
      expect(maskedMean(x, mask).dataSync()[0]).toBeCloseTo(4, 6);
      // per sequence: 6/3 = 2, 10/1 = 10; the empty third row is left out: (2 + 10) / 2 = 6
      expect(sequenceMean(x, mask).dataSync()[0]).toBeCloseTo(6, 6);
      // an all-zero mask gives 0 rather than NaN
      expect(maskedMean(x, tf.zerosLike(x)).dataSync()[0]).toBe(0);
      expect(sequenceMean(x, tf.zerosLike(x)).dataSync()[0]).toBe(0);
    });
  });
});

// Ratios r = exp(logp − old) with old = ln 0.5 and logp = ln(0.5·r).
// Row 0, A = +1: r = [0.7, 1.1, 1.25, 1.5]; row 1, A = −1: r = [0.7, 1.1, 1.5, 0.75] with the last masked.
// Band [1 − 0.2, 1 + 0.28] = [0.8, 1.28]. Token loss = max(−A·r, −A·clip(r)):
//   row 0: 0.7 → max(−0.7, −0.8) = −0.7 (unclipped: below the band helps a positive A)
//          1.1 → −1.1 (inside); 1.25 → −1.25 (inside the asymmetric band, 1.25 < 1.28)
//          1.5 → max(−1.5, −1.28) = −1.28 (clipped)
//   row 1: 0.7 → max(0.7, 0.8) = 0.8 (clipped); 1.1 → 1.1; 1.5 → max(1.5, 1.28) = 1.5 (unclipped)
// token-mean over N = 7: (−0.7 − 1.1 − 1.25 − 1.28 + 0.8 + 1.1 + 1.5) / 7 = −0.93 / 7 = −0.1328571
// seq-mean: row 0: −4.33 / 4 = −1.0825; row 1: 3.4 / 3 = 1.1333333; mean = 0.0254167
// clip fraction: 2 / 7; approx KL = mean(old − logp) = −Σ ln r / 7
const RATIOS = [
  [0.7, 1.1, 1.25, 1.5],
  [0.7, 1.1, 1.5, 0.75],
];
const ADV = [
  [1, 1, 1, 1],
  [-1, -1, -1, -1],
];
const MASK = [
  [1, 1, 1, 1],
  [1, 1, 1, 0],
];
const OLD = [
  [ln(0.5), ln(0.5), ln(0.5), ln(0.5)],
  [ln(0.5), ln(0.5), ln(0.5), ln(0.5)],
];
const LOGP = RATIOS.map((row) => row.map((r) => ln(0.5 * r)));

describe('ppoClipLoss', () => {
  it('clips ratios outside the asymmetric band for positive and negative advantages', () => {
    tf.tidy(() => {
      const input = {
        logprobs: tf.tensor2d(LOGP),
        oldLogprobs: tf.tensor2d(OLD),
        advantages: tf.tensor2d(ADV),
        mask: tf.tensor2d(MASK),
      };
      const out = ppoClipLoss(input);
      expect(out.loss.dataSync()[0]).toBeCloseTo(-0.93 / 7, 5);
      expect(out.clipFraction.dataSync()[0]).toBeCloseTo(2 / 7, 6);
      const kl = -(ln(0.7) + ln(1.1) + ln(1.25) + ln(1.5) + ln(0.7) + ln(1.1) + ln(1.5)) / 7;
      expect(out.approxKl.dataSync()[0]).toBeCloseTo(kl, 5);
      const tokens = Array.from(out.tokenLoss.dataSync());
      for (const [i, v] of [-0.7, -1.1, -1.25, -1.28, 0.8, 1.1, 1.5].entries())
        expect(tokens[i]).toBeCloseTo(v, 5);
      const seq = ppoClipLoss({ ...input, aggregation: 'seq-mean' });
      expect(seq.loss.dataSync()[0]).toBeCloseTo((-4.33 / 4 + 3.4 / 3) / 2, 5);
      // with a symmetric band (0.2 / 0.2) r = 1.25 is clipped at 1.2 too: 3 of 7 tokens
      const sym = ppoClipLoss({ ...input, clipHigh: 0.2 });
      expect(sym.clipFraction.dataSync()[0]).toBeCloseTo(3 / 7, 6);
    });
  });

  it('broadcasts one advantage per sequence', () => {
    tf.tidy(() => {
      const perToken = ppoClipLoss({
        logprobs: tf.tensor2d(LOGP),
        oldLogprobs: tf.tensor2d(OLD),
        advantages: tf.tensor2d(ADV),
        mask: tf.tensor2d(MASK),
      });
      const perSeq = ppoClipLoss({
        logprobs: tf.tensor2d(LOGP),
        oldLogprobs: tf.tensor2d(OLD),
        advantages: tf.tensor1d([1, -1]),
        mask: tf.tensor2d(MASK),
      });
      expect(perSeq.loss.dataSync()[0]).toBeCloseTo(perToken.loss.dataSync()[0], 6);
    });
  });

  it('dual clip bounds the loss of negative advantages at −c·A', () => {
    // A = −1, r = 4: plain loss max(4, 1.28) = 4; with c = 3 it is min(4, 3) = 3
    const v = scalar(() =>
      tf.tidy(
        () =>
          ppoClipLoss({
            logprobs: tf.tensor2d([[ln(4)]]),
            oldLogprobs: tf.tensor2d([[0]]),
            advantages: tf.tensor2d([[-1]]),
            mask: tf.tensor2d([[1]]),
            clipC: 3,
          }).loss,
      ),
    );
    expect(v).toBeCloseTo(3, 5);
  });

  it('rejects mismatched shapes', () => {
    tf.tidy(() => {
      expect(() =>
        ppoClipLoss({
          logprobs: tf.zeros([2, 3]),
          oldLogprobs: tf.zeros([2, 3]),
          advantages: tf.zeros([2, 3]),
          mask: tf.zeros([2, 4]),
        }),
      ).toThrow(RangeError);
    });
  });

  for (const backend of ['cpu', 'wasm'] as const) {
    it(`gradient w.r.t. logprobs is 0 when clipped and −A·r/N otherwise (${backend})`, async () => {
      const chosen = await selectBackend(backend);
      expect(chosen).toBe(backend);
      const before = tf.memory().numTensors;
      try {
        const grad = tf.tidy(() => {
          const old = tf.tensor2d(OLD);
          const adv = tf.tensor2d(ADV);
          const mask = tf.tensor2d(MASK);
          const g = tf.grad(
            (logprobs: tf.Tensor) => ppoClipLoss({ logprobs, oldLogprobs: old, advantages: adv, mask }).loss,
          );
          return g(tf.tensor2d(LOGP));
        });
        // d(−A·r)/d logp = −A·r (r = exp(logp − old)); token mean divides by N = 7
        const expected = [-0.7 / 7, -1.1 / 7, -1.25 / 7, 0, 0, 1.1 / 7, 1.5 / 7, 0];
        for (const [i, v] of values(grad).entries()) expect(v).toBeCloseTo(expected[i], 5);
        expect(tf.memory().numTensors).toBe(before);
      } finally {
        await selectBackend('cpu');
      }
    });
  }
});

function expectClose(got: number[], want: number[]): void {
  expect(got).toHaveLength(want.length);
  for (let i = 0; i < want.length; i++) expect(got[i]).toBeCloseTo(want[i], 5);
}

describe('truncated importance sampling', () => {
  // proximal − rollout = [ln 0.5, 0, ln 1.5, ln 3] → weights [0.5, 1, 1.5, 3], capped at 2.
  const proximal = [[ln(0.5) - 1, -1, ln(1.5) - 1, ln(3) - 1]];
  const rollout = [[-1, -1, -1, -1]];

  it('weights each token by min(exp(proximal − rollout), cap)', () => {
    const w = tf.tidy(() =>
      truncatedImportanceWeights({
        proximalLogprobs: tf.tensor2d(proximal),
        rolloutLogprobs: tf.tensor2d(rollout),
        cap: 2,
      }),
    );
    const got = values(w);
    expectClose(got, [0.5, 1, 1.5, 2]);
    expect(() =>
      tf.tidy(() =>
        truncatedImportanceWeights({
          proximalLogprobs: tf.tensor2d(proximal),
          rolloutLogprobs: tf.tensor2d(rollout),
          cap: 1,
        }),
      ),
    ).toThrow('the TIS cap must be > 1, got 1');
  });

  it('multiplies the PPO token loss by the weights, against the proximal policy', () => {
    tf.tidy(() => {
      // The current policy is the proximal one moved by a ratio r = [1, 1.1, 1.5, 0.7]; A = +1.
      const r = [1, 1.1, 1.5, 0.7];
      const logprobs = tf.tensor2d([proximal[0].map((p, i) => p + ln(r[i]))]);
      const mask = tf.ones([1, 4]);
      const weights = truncatedImportanceWeights({
        proximalLogprobs: tf.tensor2d(proximal),
        rolloutLogprobs: tf.tensor2d(rollout),
        cap: 2,
      });
      const out = ppoClipLoss({
        logprobs,
        oldLogprobs: tf.tensor2d(proximal),
        advantages: tf.tensor1d([1]),
        mask,
        importanceWeights: weights,
      });
      // Token losses −min(r, clip(r, 0.8, 1.28)) = [−1, −1.1, −1.28, −0.7], times [0.5, 1, 1.5, 2]:
      // [−0.5, −1.1, −1.92, −1.4]; token mean −4.92 / 4 = −1.23.
      const tokenLoss = Array.from(out.tokenLoss.dataSync());
      expectClose(tokenLoss, [-0.5, -1.1, -1.92, -1.4]);
      expect(out.loss.dataSync()[0]).toBeCloseTo(-1.23, 5);
      // The weight carries no gradient: d loss / d logp_i = −w_i·r_i / 4 where unclipped, 0 where clipped.
      const grad = tf.grad(
        (lp: tf.Tensor) =>
          ppoClipLoss({
            logprobs: lp,
            oldLogprobs: tf.tensor2d(proximal),
            advantages: tf.tensor1d([1]),
            mask,
            importanceWeights: weights,
          }).loss,
      )(logprobs);
      const g = Array.from(grad.dataSync());
      expectClose(g, [-0.5 / 4, -1.1 / 4, 0, -1.4 / 4]);
    });
  });

  it('with cap = ∞ on fresh samples (proximal = rollout) is plain PPO', () => {
    tf.tidy(() => {
      const old = tf.tensor2d([
        [-1.2, -0.4, -2.0],
        [-0.3, -0.9, -1.1],
      ]);
      const logprobs = tf.add(
        old,
        tf.tensor2d([
          [0.1, -0.3, 0.4],
          [0.05, 0.5, -0.2],
        ]),
      );
      const advantages = tf.tensor1d([1, -1]);
      const mask = tf.tensor2d([
        [1, 1, 1],
        [1, 1, 0],
      ]);
      const weights = truncatedImportanceWeights({
        proximalLogprobs: old,
        rolloutLogprobs: old,
        cap: Infinity,
      });
      expect(Array.from(weights.dataSync())).toEqual([1, 1, 1, 1, 1, 1]);
      const plain = ppoClipLoss({ logprobs, oldLogprobs: old, advantages, mask });
      const tis = ppoClipLoss({ logprobs, oldLogprobs: old, advantages, mask, importanceWeights: weights });
      expect(tis.loss.dataSync()[0]).toBe(plain.loss.dataSync()[0]);
      expect(tis.clipFraction.dataSync()[0]).toBe(plain.clipFraction.dataSync()[0]);
    });
  });
});

describe('klK3', () => {
  it('matches exp(ref − logp) − (ref − logp) − 1 on a known pair', () => {
    // token 0: logp = ln 0.5, ref = ln 0.25 → log r = ln 0.5: 0.5 + 0.693147 − 1 = 0.193147
    // token 1: logp = ln 0.25, ref = ln 0.5 → log r = ln 2:   2 − 0.693147 − 1 = 0.306853
    // token 2 masked; mean = (0.193147 + 0.306853) / 2 = 0.25
    const v = scalar(() =>
      tf.tidy(() =>
        klK3({
          logprobs: tf.tensor2d([[ln(0.5), ln(0.25), -5]]),
          refLogprobs: tf.tensor2d([[ln(0.25), ln(0.5), -0.1]]),
          mask: tf.tensor2d([[1, 1, 0]]),
        }),
      ),
    );
    expect(v).toBeCloseTo(0.25, 5);
    // identical policies: 0
    const zero = scalar(() =>
      tf.tidy(() =>
        klK3({
          logprobs: tf.tensor2d([[-1, -2]]),
          refLogprobs: tf.tensor2d([[-1, -2]]),
          mask: tf.ones([1, 2]),
        }),
      ),
    );
    expect(zero).toBeCloseTo(0, 6);
  });

  it('k1 and k2 estimators', () => {
    // log r = ln 0.5: k1 = −ln 0.5 = 0.693147; k2 = ½·0.480453 = 0.240227
    const logp = [[ln(0.5)]];
    const ref = [[ln(0.25)]];
    const k1 = values(tf.tidy(() => klPerToken(tf.tensor2d(logp), tf.tensor2d(ref), 'k1')));
    const k2 = values(tf.tidy(() => klPerToken(tf.tensor2d(logp), tf.tensor2d(ref), 'k2')));
    expect(k1[0]).toBeCloseTo(Math.LN2, 5);
    expect(k2[0]).toBeCloseTo(0.240227, 5);
  });
});

describe('entropyFromLogits', () => {
  it('is ln V for a uniform distribution and 0 for a one-hot one', () => {
    // position 0: uniform over 4 → ln 4 = 1.386294; position 1: logits [100, 0, 0, 0] → ≈ 0
    // position 2 masked; mean = 1.386294 / 2 = 0.693147
    const logits = [
      [
        [0, 0, 0, 0],
        [100, 0, 0, 0],
        [1, 2, 3, 4],
      ],
    ];
    const v = scalar(() => tf.tidy(() => entropyFromLogits(tf.tensor3d(logits), tf.tensor2d([[1, 1, 0]]))));
    expect(v).toBeCloseTo(ln(4) / 2, 5);
    const uniform = scalar(() =>
      tf.tidy(() => entropyFromLogits(tf.tensor3d(logits), tf.tensor2d([[1, 0, 0]]))),
    );
    expect(uniform).toBeCloseTo(ln(4), 5);
    const oneHot = scalar(() =>
      tf.tidy(() => entropyFromLogits(tf.tensor3d(logits), tf.tensor2d([[0, 1, 0]]))),
    );
    expect(oneHot).toBeCloseTo(0, 5);
  });
});

describe('sftLoss', () => {
  it('is the masked mean of −logp', () => {
    // (0.693147 + 1.386294) / 2 = 1.039721
    const v = scalar(() =>
      tf.tidy(() =>
        sftLoss({ logprobs: tf.tensor2d([[ln(0.5), ln(0.25), -9]]), mask: tf.tensor2d([[1, 1, 0]]) }),
      ),
    );
    expect(v).toBeCloseTo(1.039721, 5);
  });

  it('differentiates through tokenLogprobs', () => {
    // logits [0, 0] at one position, target 0: p = ½, loss = ln 2; d/dz0 = p0 − 1 = −½, d/dz1 = ½
    const g = tf.tidy(() =>
      tf.grad((logits: tf.Tensor) =>
        sftLoss({ logprobs: tokenLogprobs(logits as tf.Tensor3D, [[0]]), mask: tf.ones([1, 1]) }),
      )(tf.zeros([1, 1, 2])),
    );
    const v = values(g);
    expect(v[0]).toBeCloseTo(-0.5, 5);
    expect(v[1]).toBeCloseTo(0.5, 5);
  });
});

/** Direct reverse KL over the teacher's top-K plus a tail bin, in float64. */
function directTopKKl(studentLogits: number[], topIds: number[], topLogprobs: number[]): number {
  const max = Math.max(...studentLogits);
  const z = studentLogits.reduce((a, l) => a + Math.exp(l - max), 0);
  const p = studentLogits.map((l) => Math.exp(l - max) / z);
  const s = topIds.map((id) => p[id]);
  const t = topLogprobs.map((l) => Math.exp(l));
  const sTail = Math.max(1 - s.reduce((a, b) => a + b, 0), 1e-8);
  const tTail = Math.max(1 - t.reduce((a, b) => a + b, 0), 1e-8);
  return s.reduce((a, si, k) => a + si * (ln(si) - ln(t[k])), 0) + sTail * (ln(sTail) - ln(tTail));
}

/**
 * Position 1: student p = [0.5, 0.3, 0.2]; teacher top-2 = ids [1, 0] with p [0.6, 0.3], tail 0.1.
 * Position 2: student uniform; teacher ids [2, 1] with p [0.7, 0.2], tail 0.1.
 */
const twoPositions = () => ({
  studentLogits: tf.tensor3d([
    [
      [ln(0.5), ln(0.3), ln(0.2)],
      [0, 0, 0],
    ],
  ]),
  teacherTopIds: [
    [
      [1, 0],
      [2, 1],
    ],
  ],
  teacherTopLogprobs: tf.tensor3d([
    [
      [ln(0.6), ln(0.3)],
      [ln(0.7), ln(0.2)],
    ],
  ]),
});

describe('topKDistillationLoss', () => {
  it('matches a hand-worked K = 1 example', () => {
    // student uniform over 3 (1/3 each); teacher top-1 = id 0 with p 0.5, tail 0.5
    // student bins [1/3, 2/3]: 1/3·ln((1/3)/0.5) + 2/3·ln((2/3)/0.5)
    //   = 1/3·(−0.405465) + 2/3·(0.287682) = −0.135155 + 0.191788 = 0.056633
    const v = scalar(() =>
      tf.tidy(() =>
        topKDistillationLoss({
          studentLogits: tf.zeros([1, 1, 3]),
          teacherTopIds: [[[0]]],
          teacherTopLogprobs: tf.tensor3d([[[ln(0.5)]]]),
          mask: tf.ones([1, 1]),
        }),
      ),
    );
    expect(v).toBeCloseTo(0.056633, 5);
  });

  it('matches hand-worked numbers on a 3-token vocabulary with K = 2 plus the tail bin', () => {
    // Position 1: student p = [0.5, 0.3, 0.2] (logits ln p); teacher top-2 = ids [1, 0] with
    // p [0.6, 0.3], tail 0.1. Student bins [0.3, 0.5], tail 0.2:
    //   0.3·ln(0.3/0.6) + 0.5·ln(0.5/0.3) + 0.2·ln(0.2/0.1)
    //   = −0.207944 + 0.255413 + 0.138629 = 0.186098
    // Position 2: student uniform (1/3 each); teacher ids [2, 1] with p [0.7, 0.2], tail 0.1:
    //   ⅓·(ln(⅓/0.7) + ln(⅓/0.2) + ln(⅓/0.1)) = ⅓·(−0.741937 + 0.510826 + 1.203973) = 0.324287
    const input = twoPositions;
    const perToken = values(tf.tidy(() => topKKlPerToken(input())));
    expect(perToken[0]).toBeCloseTo(0.186098, 5);
    expect(perToken[1]).toBeCloseTo(0.324287, 5);
    const both = scalar(() => tf.tidy(() => topKDistillationLoss({ ...input(), mask: tf.ones([1, 2]) })));
    expect(both).toBeCloseTo((0.186098 + 0.324287) / 2, 5);
    const first = scalar(() =>
      tf.tidy(() => topKDistillationLoss({ ...input(), mask: tf.tensor2d([[1, 0]]) })),
    );
    expect(first).toBeCloseTo(0.186098, 5);
  });

  it('forward: KL(teacher‖student) over the same bins, and it raises a token the student gives no mass', () => {
    const perToken = values(tf.tidy(() => topKKlPerToken({ ...twoPositions(), direction: 'forward' })));
    // 0.6 ln(0.6/0.3) + 0.3 ln(0.3/0.5) + 0.1 ln(0.1/0.2); 0.7 ln(0.7·3) + 0.2 ln(0.2·3) + 0.1 ln(0.1·3)
    expect(perToken[0]).toBeCloseTo(0.193327, 5);
    expect(perToken[1]).toBeCloseTo(0.296794, 5);
    // The teacher's top token (id 0, p 0.9) has logit −30 under the student: the reverse KL's
    // gradient on it vanishes with the student's probability, the forward KL's is −(0.9 − p).
    const grad = (direction: 'reverse' | 'forward') =>
      tf.tidy(
        () =>
          tf
            .grad((logits: tf.Tensor) =>
              tf.sum(
                topKKlPerToken({
                  studentLogits: logits,
                  teacherTopIds: [[[0]]],
                  teacherTopLogprobs: tf.tensor3d([[[ln(0.9)]]]),
                  direction,
                }),
              ),
            )(tf.tensor3d([[[-30, 0, 0]]]))
            .dataSync()[0],
      );
    expect(Math.abs(grad('reverse'))).toBeLessThan(1e-9);
    expect(grad('forward')).toBeCloseTo(-0.9, 5);
  });

  it('matches a direct computation (gather and one-hot) and is 0 when the teacher is the student', () => {
    const logits = [
      [
        [1.0, -0.5, 2.0, 0.3, -1.2],
        [0.0, 0.4, -0.7, 1.5, 0.2],
      ],
      [
        [-0.3, 0.9, 0.1, 0.0, 2.2],
        [0.5, 0.5, 0.5, -2.0, 1.0],
      ],
    ];
    const ids = [
      [
        [2, 0],
        [3, 4],
      ],
      [
        [4, 1],
        [0, 4],
      ],
    ];
    const teacherLp = [
      [
        [ln(0.6), ln(0.2)],
        [ln(0.5), ln(0.1)],
      ],
      [
        [ln(0.3), ln(0.3)],
        [ln(0.9), ln(0.05)],
      ],
    ];
    const mask = [
      [1, 1],
      [1, 0],
    ];
    const direct = ids.map((row, b) => row.map((k, t) => directTopKKl(logits[b][t], k, teacherLp[b][t])));
    // token mean over the 3 unmasked positions
    const expected = (direct[0][0] + direct[0][1] + direct[1][0]) / 3;
    for (const select of ['gather', 'onehot'] as const) {
      const v = scalar(() =>
        tf.tidy(() =>
          topKDistillationLoss({
            studentLogits: tf.tensor3d(logits),
            teacherTopIds: tf.tensor3d(ids, undefined, 'int32'),
            teacherTopLogprobs: tf.tensor3d(teacherLp),
            mask: tf.tensor2d(mask),
            select,
          }),
        ),
      );
      expect(v).toBeCloseTo(expected, 5);
    }
    const perToken = values(
      tf.tidy(() =>
        topKKlPerToken({
          studentLogits: tf.tensor3d(logits),
          teacherTopIds: ids,
          teacherTopLogprobs: tf.tensor3d(teacherLp),
        }),
      ),
    );
    for (const [i, d] of direct.flat().entries()) expect(perToken[i]).toBeCloseTo(d, 5);
    // teacher = the student's own top-2 logprobs: every bin matches, KL 0
    const self = scalar(() =>
      tf.tidy(() => {
        const student = tf.tensor3d(logits);
        const idT = tf.tensor3d(ids, undefined, 'int32');
        const own = tf.reshape(
          tf.gather(
            tf.reshape(tf.logSoftmax(student), [-1]),
            tf.reshape(
              tf.add(tf.mul(tf.reshape(tf.range(0, 4, 1, 'int32'), [2, 2, 1]), tf.scalar(5, 'int32')), idT),
              [-1],
            ),
          ),
          [2, 2, 2],
        );
        return topKDistillationLoss({
          studentLogits: student,
          teacherTopIds: idT,
          teacherTopLogprobs: own,
          mask: tf.ones([2, 2]),
        });
      }),
    );
    expect(self).toBeCloseTo(0, 5);
  });

  it('has the same gradient through gather and one-hot selection', () => {
    const run = (select: 'gather' | 'onehot') =>
      values(
        tf.tidy(() =>
          tf.grad((logits: tf.Tensor) =>
            topKDistillationLoss({
              studentLogits: logits,
              teacherTopIds: [[[1, 2]]],
              teacherTopLogprobs: tf.tensor3d([[[ln(0.7), ln(0.2)]]]),
              mask: tf.ones([1, 1]),
              select,
            }),
          )(tf.tensor3d([[[0.1, -0.2, 0.3, 0.0]]])),
        ),
      );
    const a = run('gather');
    const b = run('onehot');
    expect(a.some((v) => Math.abs(v) > 1e-3)).toBe(true);
    for (const [i, v] of a.entries()) expect(v).toBeCloseTo(b[i], 5);
  });
});

describe('topKDistillationLoss on wasm', () => {
  it('differentiates with the default selection (one-hot on wasm) like gather on cpu', async () => {
    const run = () =>
      values(
        tf.tidy(() =>
          tf.grad((logits: tf.Tensor) =>
            topKDistillationLoss({
              studentLogits: logits,
              teacherTopIds: [[[1, 2]]],
              teacherTopLogprobs: tf.tensor3d([[[ln(0.7), ln(0.2)]]]),
              mask: tf.ones([1, 1]),
            }),
          )(tf.tensor3d([[[0.1, -0.2, 0.3, 0.0]]])),
        ),
      );
    const onCpu = run();
    expect(await selectBackend('wasm')).toBe('wasm');
    try {
      const onWasm = run();
      for (const [i, v] of onWasm.entries()) expect(v).toBeCloseTo(onCpu[i], 5);
    } finally {
      await selectBackend('cpu');
    }
  });
});

describe('rlLoss', () => {
  it('composes pg loss + klCoef·KL − entropyCoef·entropy and returns every component', () => {
    tf.tidy(() => {
      const logprobs = tf.tensor2d(LOGP);
      const oldLogprobs = tf.tensor2d(OLD);
      const advantages = tf.tensor2d(ADV);
      const mask = tf.tensor2d(MASK);
      const refLogprobs = tf.tensor2d(OLD);
      const logits = tf.randomNormal([2, 4, 5], 0, 1, 'float32', 7);
      const out = rlLoss({
        logprobs,
        oldLogprobs,
        advantages,
        mask,
        refLogprobs,
        klCoef: 0.1,
        logits,
        entropyCoef: 0.01,
      });
      const pg = out.pgLoss.dataSync()[0];
      const kl = out.kl!.dataSync()[0];
      const ent = out.entropy!.dataSync()[0];
      expect(pg).toBeCloseTo(-0.93 / 7, 5);
      expect(kl).toBeCloseTo(klK3({ logprobs, refLogprobs, mask }).dataSync()[0], 6);
      expect(ent).toBeCloseTo(entropyFromLogits(logits, mask).dataSync()[0], 6);
      expect(out.loss.dataSync()[0]).toBeCloseTo(pg + 0.1 * kl - 0.01 * ent, 5);
      expect(out.clipFraction.dataSync()[0]).toBeCloseTo(2 / 7, 6);

      const plain = rlLoss({ logprobs, oldLogprobs, advantages, mask });
      expect(plain.kl).toBeUndefined();
      expect(plain.entropy).toBeUndefined();
      expect(plain.loss.dataSync()[0]).toBeCloseTo(pg, 6);
      expect(() => rlLoss({ logprobs, oldLogprobs, advantages, mask, klCoef: 0.1 })).toThrow(RangeError);
      expect(() => rlLoss({ logprobs, oldLogprobs, advantages, mask, entropyCoef: 0.1 })).toThrow(RangeError);
    });
  });
});
