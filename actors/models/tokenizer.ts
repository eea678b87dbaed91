/**
 * Tokenizers from a Hugging Face `tokenizer.json` (through `@huggingface/tokenizers`, the
 * pure-JS port of HF tokenizers), and the byte-level BPE tokenizer random models ship with.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { ConfigError } from '../../common/errors.js';

export const TOKENIZER_FILE = 'tokenizer.json';
export const TOKENIZER_CONFIG_FILE = 'tokenizer_config.json';

export interface EncodeOptions {
  /**
   * Let the tokenizer's post-processor add its special tokens (a BOS, say). Off by default:
   * text rendered by a chat template already carries every special token it needs, and adding
   * them again would double them.
   */
  addSpecialTokens?: boolean;
}

export interface DecodeOptions {
  skipSpecialTokens?: boolean;
}

/** The parts of `tokenizer_config.json` this wrapper reads; everything else passes through. */
export interface TokenizerConfigJson {
  bos_token?: unknown;
  eos_token?: unknown;
  pad_token?: unknown;
  unk_token?: unknown;
  additional_special_tokens?: unknown;
  clean_up_tokenization_spaces?: boolean;
  chat_template?: unknown;
  [key: string]: unknown;
}

/** A special token in tokenizer_config.json is a string or a serialized AddedToken `{content}`. */
function tokenString(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') {
    return (v as { content: string }).content;
  }
  return null;
}

export class Tokenizer {
  /** Where it was loaded from (for error messages). */
  readonly source: string;
  /** One more than the largest token id (added tokens included). */
  readonly vocabSize: number;
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  readonly padToken: string | null;
  readonly bosTokenId: number | null;
  readonly eosTokenId: number | null;
  readonly padTokenId: number | null;
  /** Tokens flagged `special` (what `skipSpecialTokens` removes). */
  readonly specialTokens: readonly string[];
  /** Every added token (special or not) by id, e.g. `<tool_call>`. */
  readonly addedTokens: ReadonlyMap<number, string>;
  private readonly hf: HfTokenizer;
  private readonly specialIds: Set<number>;
  /** The decoder maps byte-level pieces back to bytes (GPT-2 / Qwen / Llama-3 style). */
  private readonly byteLevel: boolean;

  private constructor(hf: HfTokenizer, config: TokenizerConfigJson, source: string, byteLevel: boolean) {
    this.hf = hf;
    this.byteLevel = byteLevel;
    this.source = source;
    let max = -1;
    for (const id of hf.get_vocab(true).values()) if (id > max) max = id;
    this.vocabSize = max + 1;
    const added = new Map<number, string>();
    const special = new Set<number>();
    for (const [id, t] of hf.get_added_tokens_decoder()) {
      added.set(id, t.content);
      if (t.special) special.add(id);
    }
    this.addedTokens = added;
    this.specialIds = special;
    this.specialTokens = [...special].sort((a, b) => a - b).map((id) => added.get(id)!);
    const idOf = (token: string | null, field: string): number | null => {
      if (token === null) return null;
      const id = hf.token_to_id(token);
      if (id === undefined) {
        throw new ConfigError(`${source}: ${field} '${token}' is not in the vocabulary`, {
          fields: { file: source },
        });
      }
      return id;
    };
    this.bosToken = tokenString(config.bos_token);
    this.eosToken = tokenString(config.eos_token);
    this.padToken = tokenString(config.pad_token);
    this.bosTokenId = idOf(this.bosToken, 'bos_token');
    this.eosTokenId = idOf(this.eosToken, 'eos_token');
    this.padTokenId = idOf(this.padToken, 'pad_token');
  }

  /**
   * From a parsed `tokenizer.json` and (optionally) `tokenizer_config.json`. `source` names
   * the file in errors.
   */
  static fromJson(
    tokenizerJson: unknown,
    config: TokenizerConfigJson = {},
    source = TOKENIZER_FILE,
  ): Tokenizer {
    if (!tokenizerJson || typeof tokenizerJson !== 'object' || Array.isArray(tokenizerJson)) {
      throw new ConfigError(`${source}: not a tokenizer (expected a JSON object)`, {
        fields: { file: source },
      });
    }
    const json = tokenizerJson as Record<string, unknown>;
    if (!json.model || typeof json.model !== 'object') {
      throw new ConfigError(`${source}: not a tokenizer: 'model' is missing`, { fields: { file: source } });
    }
    // The library insists these keys exist; files written by older tokenizers omit null ones.
    const complete = {
      normalizer: null,
      pre_tokenizer: null,
      post_processor: null,
      decoder: null,
      added_tokens: [],
      ...json,
    };
    const libConfig: Record<string, unknown> = {
      ...config,
      // Exact round trips matter more than prettified spacing: RL keeps the model's own text.
      clean_up_tokenization_spaces: config.clean_up_tokenization_spaces ?? false,
    };
    for (const key of ['bos_token', 'eos_token', 'pad_token', 'unk_token'] as const) {
      if (key in config) libConfig[key] = tokenString(config[key]) ?? undefined;
    }
    if (Array.isArray(config.additional_special_tokens)) {
      libConfig.additional_special_tokens = config.additional_special_tokens
        .map(tokenString)
        .filter((t): t is string => t !== null);
    }
    let hf: HfTokenizer;
    try {
      hf = new HfTokenizer(complete, libConfig);
    } catch (err) {
      throw new ConfigError(`${source}: cannot build the tokenizer (${(err as Error).message})`, {
        cause: err,
        fields: { file: source },
      });
    }
    return new Tokenizer(hf, config, source, hasByteLevelDecoder(json.decoder));
  }

  /** `tokenizer.json` (required) and `tokenizer_config.json` (optional) from a model directory. */
  static load(dir: string): Tokenizer {
    const file = join(dir, TOKENIZER_FILE);
    if (!existsSync(file)) {
      throw new ConfigError(`${file}: missing: a model directory needs a ${TOKENIZER_FILE}`, {
        fields: { file },
      });
    }
    const json = readJsonFile(file, 'tokenizer');
    const configFile = join(dir, TOKENIZER_CONFIG_FILE);
    const config = existsSync(configFile) ? readJsonFile(configFile, 'tokenizer config') : {};
    if (!config || typeof config !== 'object' || Array.isArray(config)) {
      throw new ConfigError(`${configFile}: expected a JSON object`, { fields: { file: configFile } });
    }
    return Tokenizer.fromJson(json, config as TokenizerConfigJson, file);
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    return this.hf.encode(text, { add_special_tokens: options.addSpecialTokens ?? false }).ids;
  }

  /** Ids the vocabulary does not have are skipped, as HF tokenizers do (padded embeddings). */
  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    const known = ids.filter((id) => this.hf.id_to_token(id) !== undefined);
    if (known.length === 0) return '';
    return this.hf.decode(known, {
      skip_special_tokens: options.skipSpecialTokens ?? false,
      clean_up_tokenization_spaces: false,
    });
  }

  /** Token strings as the model sees them (byte-level tokens in their unicode form). */
  tokenize(text: string): string[] {
    return this.hf.encode(text, { add_special_tokens: false }).tokens;
  }

  tokenId(token: string): number | undefined {
    return this.hf.token_to_id(token);
  }

  idToToken(id: number): string | undefined {
    return this.hf.id_to_token(id);
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  /**
   * The raw bytes of one token (OpenAI's `logprobs.bytes`): a byte-level piece mapped back to
   * its bytes, which may be part of a UTF-8 character; a `<0xNN>` byte-fallback piece as that
   * byte; anything else as the UTF-8 of its text.
   */
  tokenBytes(id: number): number[] {
    const added = this.addedTokens.get(id);
    if (added !== undefined) return [...Buffer.from(added, 'utf8')];
    const piece = this.hf.id_to_token(id);
    if (piece === undefined) return [];
    if (this.byteLevel) {
      const bytes: number[] = [];
      for (const ch of piece) {
        const b = UNICODE_TO_BYTE.get(ch);
        if (b === undefined) return [...Buffer.from(this.decode([id]), 'utf8')];
        bytes.push(b);
      }
      return bytes;
    }
    const fallback = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
    if (fallback) return [Number.parseInt(fallback[1], 16)];
    return [...Buffer.from(this.decode([id]), 'utf8')];
  }
}

function hasByteLevelDecoder(decoder: unknown): boolean {
  if (!decoder || typeof decoder !== 'object') return false;
  const d = decoder as { type?: unknown; decoders?: unknown };
  if (d.type === 'ByteLevel') return true;
  return Array.isArray(d.decoders) && d.decoders.some(hasByteLevelDecoder);
}

function readJsonFile(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${file}: cannot read the ${what} (${(err as Error).message})`, {
      cause: err,
      fields: { file },
    });
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${file}: not valid JSON (${(err as Error).message})`, {
      cause: err,
      fields: { file },
    });
  }
}

// ---------------------------------------------------------------------------------------------
// The byte-level BPE tokenizer of random models

/** GPT-2's byte → printable character table: bytes that print stand for themselves. */
export const BYTE_TO_UNICODE: readonly string[] = (() => {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const table: string[] = new Array(256);
  for (const b of printable) table[b] = String.fromCharCode(b);
  let n = 0;
  for (let b = 0; b < 256; b++) if (table[b] === undefined) table[b] = String.fromCharCode(256 + n++);
  return table;
})();

const UNICODE_TO_BYTE: ReadonlyMap<string, number> = new Map(BYTE_TO_UNICODE.map((ch, b) => [ch, b]));

/** GPT-2's vocabulary order for the 256 byte tokens: printable bytes first, then the rest. */
function byteTokenOrder(): number[] {
  const order: number[] = [];
  for (let b = 0; b < 256; b++) if (BYTE_TO_UNICODE[b].charCodeAt(0) === b) order.push(b);
  for (let b = 0; b < 256; b++) if (BYTE_TO_UNICODE[b].charCodeAt(0) !== b) order.push(b);
  return order;
}

/**
 * Qwen's added tokens. The chat markers are special (dropped by `skipSpecialTokens`); the tool
 * and think markers are not, exactly as in Qwen's tokenizer, so decoded text keeps tool calls.
 */
export const QWEN_ADDED_TOKENS: readonly { content: string; special: boolean }[] = [
  { content: '<|endoftext|>', special: true },
  { content: '<|im_start|>', special: true },
  { content: '<|im_end|>', special: true },
  { content: '<tool_call>', special: false },
  { content: '</tool_call>', special: false },
  { content: '<tool_response>', special: false },
  { content: '</tool_response>', special: false },
  { content: '<think>', special: false },
  { content: '</think>', special: false },
];

/** Qwen2's pre-tokenizer split (Oniguruma syntax, as tokenizer.json stores it). */
export const QWEN_SPLIT_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** The same split in JavaScript, for learning merges. */
const SPLIT_RE =
  /'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

/**
 * What the merges are learned from: the words an agent transcript is made of (chat roles,
 * tool-call JSON, shell and code fragments, plain English), so that tiny models see short
 * sequences for the text tests use.
 */
const MERGE_CORPUS = `
The quick brown fox jumps over the lazy dog. The user asks the assistant a question and the
assistant answers with a short and helpful reply. When the assistant needs more information, it
calls a tool: the tool call names the function and gives its arguments as a JSON object, and the
tool returns a result that the assistant reads before it answers the user.
{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
{"name": "search", "arguments": {"query": "the best way to learn to program"}}
{"name": "run_command", "arguments": {"command": "ls -la && cat README.md"}}
You are a helpful assistant. Think step by step, then give the final answer.
The answer is 42. The result of the function is the value of the string in the file.
def main(): return print("hello world") if the name is not None else the default value
for each line in the input, read the line, split it into words, and count the words.
This is a test of the tokenizer: it should encode and decode the text without loss.
There are three things that matter here: the state, the action, and the reward.
The environment gives an observation; the agent takes an action; the trainer learns.
In the morning the weather was sunny, and in the evening it started to rain in the city.
I think that we should check the status of the job and then submit the next one.
Please write a function that returns the sum of the numbers in the list.
`;

/**
 * Classic BPE training over the corpus words (each counted with multiplicity) until `newTokens`
 * new tokens exist. A merge whose result is already a token (reached by another split) is kept
 * as a rule but adds no token, as the HF trainer does.
 */
function learnMerges(corpus: string, newTokens: number): [string, string][] {
  const encoder = new TextEncoder();
  const wordCounts = new Map<string, number>();
  for (const piece of corpus.match(SPLIT_RE) ?? []) {
    const w = Array.from(encoder.encode(piece), (b) => BYTE_TO_UNICODE[b]).join('');
    wordCounts.set(w, (wordCounts.get(w) ?? 0) + 1);
  }
  const words = [...wordCounts].map(([w, n]) => ({ symbols: Array.from(w), n }));
  const merges: [string, string][] = [];
  const known = new Set<string>(BYTE_TO_UNICODE);
  let added = 0;
  while (added < newTokens) {
    const pairs = new Map<string, number>();
    for (const { symbols, n } of words) {
      for (let i = 0; i + 1 < symbols.length; i++) {
        const key = `${symbols[i]}\u0000${symbols[i + 1]}`;
        pairs.set(key, (pairs.get(key) ?? 0) + n);
      }
    }
    let best: string | null = null;
    let bestCount = 0;
    for (const [key, n] of pairs) {
      // Ties break on the pair's text so the result never depends on Map iteration order.
      if (n > bestCount || (n === bestCount && best !== null && key < best)) {
        best = key;
        bestCount = n;
      }
    }
    if (best === null) break;
    const [a, b] = best.split('\u0000') as [string, string];
    merges.push([a, b]);
    if (!known.has(a + b)) {
      known.add(a + b);
      added++;
    }
    for (const word of words) {
      const s = word.symbols;
      const out: string[] = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === a && s[i + 1] === b) {
          out.push(a + b);
          i++;
        } else out.push(s[i]);
      }
      word.symbols = out;
    }
  }
  return merges;
}

/**
 * A byte-level BPE `tokenizer.json` (the layout of Qwen2's) with exactly `vocabSize` tokens:
 * 256 byte tokens, merges learned deterministically from a built-in text, and Qwen's added
 * tokens at the end. If the text runs out of merges, the rest are reserved special tokens.
 */
export function buildByteLevelTokenizerJson(vocabSize: number): Record<string, unknown> {
  const minimum = 256 + QWEN_ADDED_TOKENS.length;
  if (!Number.isInteger(vocabSize) || vocabSize < minimum) {
    throw new ConfigError(
      `vocab size ${vocabSize} is too small for a byte-level tokenizer (at least ${minimum})`,
    );
  }
  const vocab: Record<string, number> = {};
  let next = 0;
  for (const b of byteTokenOrder()) vocab[BYTE_TO_UNICODE[b]] = next++;
  const merges = learnMerges(MERGE_CORPUS, vocabSize - minimum);
  for (const [a, b] of merges) if (!Object.hasOwn(vocab, a + b)) vocab[a + b] = next++;
  const added: Record<string, unknown>[] = [];
  const addToken = (content: string, special: boolean) =>
    added.push({
      id: next++,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special,
    });
  for (const t of QWEN_ADDED_TOKENS) addToken(t.content, t.special);
  for (let i = 0; next < vocabSize; i++) addToken(`<|reserved_${i}|>`, true);
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    // No NFC normalizer (Qwen has one): bytes in, same bytes out, even for unnormalized text.
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: QWEN_SPLIT_PATTERN }, behavior: 'Isolated', invert: false },
        byteLevel,
      ],
    },
    post_processor: byteLevel,
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
}
