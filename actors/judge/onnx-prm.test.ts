import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { DEFAULT_TINY_PRM, type TinyPrm, writeTinyPrm } from '../../test/helpers/tiny-prm.js';
import { decodeModel } from '../models/onnx-proto.js';
import { OnnxPrm, positiveProbability, readPrmDir } from './onnx-prm.js';
import { buildClassifierText, type JudgeInput } from './prompts.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-onnx-prm-'));
let tiny: TinyPrm;
let prm: OnnxPrm;

/** The classifier's math written out by hand: masked mean of embeddings, affine map, softmax. */
function expectedProbability(ids: number[], positive = 1): number {
  const { weight, bias, embeddings } = DEFAULT_TINY_PRM;
  const tokenOf = new Map([...tiny.vocab].map(([token, id]) => [id, token]));
  const pooled = [0, 0];
  for (const id of ids) {
    const e = embeddings[tokenOf.get(id)!] ?? [0, 0];
    pooled[0] += e[0] / ids.length;
    pooled[1] += e[1] / ids.length;
  }
  const logits = bias.map((b, j) => b + pooled[0] * weight[0][j] + pooled[1] * weight[1][j]);
  const exps = logits.map(Math.exp);
  return exps[positive] / (exps[0] + exps[1]);
}

const ids = (...tokens: string[]) => tokens.map((t) => tiny.vocab.get(t)!);

beforeAll(async () => {
  tiny = writeTinyPrm(join(root, 'tiny'));
  prm = await OnnxPrm.load({ modelDir: tiny.dir, provider: 'cpu' });
});

afterAll(async () => {
  await prm.release();
  rmSync(root, { recursive: true, force: true });
});

describe('the tiny test classifier', () => {
  it('is a real ONNX model that onnxruntime runs and our reader decodes', async () => {
    const bytes = readFileSync(join(tiny.dir, 'model.onnx'));
    const model = decodeModel(bytes);
    expect(model.graph.node.map((n) => n.op_type)).toEqual([
      'Gather',
      'Cast',
      'Unsqueeze',
      'Mul',
      'ReduceSum',
      'ReduceSum',
      'Div',
      'MatMul',
      'Add',
    ]);
    const session = await ort.InferenceSession.create(bytes);
    try {
      expect(session.inputNames).toEqual(['input_ids', 'attention_mask']);
      const input = ids('[CLS]', 'thanks', '[SEP]');
      const out = await session.run({
        input_ids: new ort.Tensor('int64', BigInt64Array.from(input.map(BigInt)), [1, 3]),
        attention_mask: new ort.Tensor('int64', BigInt64Array.from([1n, 1n, 1n]), [1, 3]),
      });
      expect(out.logits.dims).toEqual([1, 2]);
    } finally {
      await session.release();
    }
  });
});

describe('OnnxPrm', () => {
  it('reads labels, the positive class and the length limit from the directory', () => {
    expect(prm.labels).toEqual(['bad', 'good']);
    expect(prm.positiveLabel).toBe('good');
    expect(prm.spec.maxLength).toBe(64);
    expect(prm.provider).toBe('cpu');
  });

  it('tokenizes with the special tokens a classifier is trained with', () => {
    expect(prm.encode('Thanks, GREAT!')).toEqual(ids('[CLS]', 'thanks', '[UNK]', 'great', '[UNK]', '[SEP]'));
  });

  it('gives the softmax probability of the positive class, equal to the hand computation', async () => {
    const cases: Array<[string, number[]]> = [
      ['Thanks, great!', ids('[CLS]', 'thanks', '[UNK]', 'great', '[UNK]', '[SEP]')],
      ['wrong, redo it again', ids('[CLS]', 'wrong', '[UNK]', 'redo', '[UNK]', 'again', '[SEP]')],
      ['perfect', ids('[CLS]', 'perfect', '[SEP]')],
      ['', ids('[CLS]', '[SEP]')],
    ];
    for (const [text, tokens] of cases) {
      expect(prm.encode(text)).toEqual(tokens);
      expect(Math.abs((await prm.probability(text)) - expectedProbability(tokens))).toBeLessThanOrEqual(1e-5);
    }
    expect(await prm.probability('Thanks, great!')).toBeGreaterThan(0.5);
    expect(await prm.probability('wrong, redo it again')).toBeLessThan(0.5);
  });

  it('scores a padded batch exactly like single inputs', async () => {
    const texts = ['thanks', 'wrong wrong wrong, redo it again please', 'the user'];
    const batch = await prm.probabilities(texts);
    for (let i = 0; i < texts.length; i++) {
      expect(Math.abs(batch[i] - (await prm.probability(texts[i])))).toBeLessThanOrEqual(1e-6);
    }
    expect(await prm.probabilities([])).toEqual([]);
  });

  it('votes +1 at or above the threshold and -1 below it, on the turn text', async () => {
    const turn = (next: string): JudgeInput => ({
      messages: [{ role: 'user', content: 'Convert 5 miles to km.' }],
      response: 'About 8 km.',
      nextState: { role: 'user', content: next },
    });
    const good = await prm.scoreTurn(turn('Thanks, perfect, great!'));
    expect(good.score).toBe(1);
    const text = buildClassifierText(turn('Thanks, perfect, great!'));
    expect(text.endsWith('[next state (user)]\nThanks, perfect, great!')).toBe(true);
    expect(Math.abs(good.probability - expectedProbability(prm.encode(text)))).toBeLessThanOrEqual(1e-5);
    const bad = await prm.scoreTurn(turn('Wrong. Redo it, again!'));
    expect(bad).toMatchObject({ score: -1 });
    expect(bad.probability).toBeLessThan(0.5);

    const strict = await OnnxPrm.load({ modelDir: tiny.dir, threshold: 0.99, provider: 'cpu' });
    try {
      expect((await strict.scoreTurn(turn('Thanks, perfect, great!'))).score).toBe(-1);
    } finally {
      await strict.release();
    }
  });

  it('truncates long inputs from the left, keeping [CLS] and the end', async () => {
    const short = await OnnxPrm.load({ modelDir: tiny.dir, maxLength: 4, provider: 'cpu' });
    try {
      expect(short.encode('redo wrong again thanks great')).toEqual(ids('[CLS]', 'thanks', 'great', '[SEP]'));
      expect(short.encode('thanks')).toEqual(ids('[CLS]', 'thanks', '[SEP]'));
    } finally {
      await short.release();
    }
  });

  it('runs a model without attention_mask (Gather → ReduceMean → MatMul + Add)', async () => {
    const plain = writeTinyPrm(join(root, 'plain'), { ...DEFAULT_TINY_PRM, attentionMask: false });
    const model = await OnnxPrm.load({ modelDir: plain.dir, provider: 'cpu' });
    try {
      const tokens = ids('[CLS]', 'redo', '[SEP]');
      expect(Math.abs((await model.probability('redo')) - expectedProbability(tokens))).toBeLessThanOrEqual(
        1e-5,
      );
    } finally {
      await model.release();
    }
  });
});

describe('positive class', () => {
  const dirWithLabels = (name: string, labels: string[]) =>
    writeTinyPrm(join(root, name), { ...DEFAULT_TINY_PRM, labels }).dir;

  it('is found by name (1, positive, LABEL_1, good…) or given by positiveLabel', () => {
    expect(readPrmDir({ modelDir: dirWithLabels('np', ['NEGATIVE', 'POSITIVE']) }).positiveIndex).toBe(1);
    expect(readPrmDir({ modelDir: dirWithLabels('hf', ['LABEL_1', 'LABEL_0']) }).positiveIndex).toBe(0);
    expect(readPrmDir({ modelDir: dirWithLabels('digits', ['0', '1']) }).positiveIndex).toBe(1);
    const ab = dirWithLabels('ab', ['helpful', 'unhelpful']);
    expect(() => readPrmDir({ modelDir: ab })).toThrow(
      /config\.json: cannot tell which label.*set positiveLabel/,
    );
    expect(readPrmDir({ modelDir: ab, positiveLabel: 'HELPFUL' }).positiveIndex).toBe(0);
    expect(readPrmDir({ modelDir: ab, positiveLabel: 1 }).positiveIndex).toBe(1);
    expect(() => readPrmDir({ modelDir: ab, positiveLabel: 'nice' })).toThrow(/'nice' is not a label/);
    expect(() => readPrmDir({ modelDir: ab, positiveLabel: 2 })).toThrow(ConfigError);
  });

  it('is read through the positive label on the model, whichever index it has', async () => {
    const dir = dirWithLabels('flipped', ['good', 'bad']);
    const flipped = await OnnxPrm.load({ modelDir: dir, provider: 'cpu' });
    try {
      const tokens = ids('[CLS]', 'thanks', '[SEP]');
      expect(
        Math.abs((await flipped.probability('thanks')) - expectedProbability(tokens, 0)),
      ).toBeLessThanOrEqual(1e-5);
    } finally {
      await flipped.release();
    }
  });

  it('softmax is stable for large logits; a single logit is read through a sigmoid', () => {
    expect(positiveProbability([1000, 1001], 1)).toBeCloseTo(1 / (1 + Math.exp(-1)), 12);
    expect(positiveProbability([0], 0)).toBe(0.5);
    expect(positiveProbability([2], 0)).toBeCloseTo(1 / (1 + Math.exp(-2)), 12);
  });
});

describe('bad directories name the file at fault', () => {
  const broken = (name: string) => writeTinyPrm(join(root, name)).dir;

  it('a missing directory or file', () => {
    expect(() => readPrmDir({ modelDir: join(root, 'nope') })).toThrow(/nope: no such model directory/);
    for (const file of ['model.onnx', 'config.json', 'tokenizer.json']) {
      const dir = broken(`missing-${file}`);
      rmSync(join(dir, file));
      const err = (() => {
        try {
          readPrmDir({ modelDir: dir });
        } catch (e) {
          return e as ConfigError;
        }
      })();
      expect(err).toBeInstanceOf(ConfigError);
      expect(err!.message).toContain(join(dir, file));
      expect(err!.fields.file).toBe(join(dir, file));
    }
  });

  it('unreadable config.json, bad id2label, bad options', () => {
    const dir = broken('bad-config');
    writeFileSync(join(dir, 'config.json'), '{ nope');
    expect(() => readPrmDir({ modelDir: dir })).toThrow(
      `${join(dir, 'config.json')}: cannot read it as JSON`,
    );
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ id2label: { 0: 'bad', 5: 'good' } }));
    expect(() => readPrmDir({ modelDir: dir })).toThrow(/config\.json: id2label must map the indices 0\.\.1/);
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({ id2label: { 0: 'bad', 1: 'good' }, num_labels: 3 }),
    );
    expect(() => readPrmDir({ modelDir: dir })).toThrow(/num_labels is 3 but id2label has 2/);
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ num_labels: 2 }));
    expect(readPrmDir({ modelDir: dir }).labels).toEqual(['LABEL_0', 'LABEL_1']);
    expect(() => readPrmDir({ modelDir: dir, threshold: 2 })).toThrow(/threshold must be in \[0, 1\]/);
  });

  it('a model.onnx that is not a model, or not a classifier', async () => {
    const dir = broken('garbage');
    writeFileSync(join(dir, 'model.onnx'), 'this is not protobuf');
    await expect(OnnxPrm.load({ modelDir: dir, provider: 'cpu' })).rejects.toThrow(
      `${join(dir, 'model.onnx')}: onnxruntime cannot load it`,
    );
    const mismatch = broken('three-labels');
    writeFileSync(join(mismatch, 'config.json'), JSON.stringify({ id2label: { 0: 'a', 1: 'b', 2: 'good' } }));
    const model = await OnnxPrm.load({ modelDir: mismatch, provider: 'cpu' });
    try {
      await expect(model.probability('thanks')).rejects.toThrow(
        /gives 2 logits per input but config\.json has 3/,
      );
    } finally {
      await model.release();
    }
  });
});
