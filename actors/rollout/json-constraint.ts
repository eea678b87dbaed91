/**
 * OpenAI's `response_format: {"type": "json_object"}`: the answer is one JSON object. Decoding
 * is constrained token by token: a token is allowed when its bytes keep the output a prefix of
 * a JSON object (RFC 8259: objects, arrays, strings with escapes, numbers, literals, whitespace),
 * and once the object is closed only an end-of-sequence token is.
 *
 * `JsonPrefix` is a byte-level pushdown automaton whose whole state is a few primitives (the
 * container stack is a string), so trying a token is a copy and a walk over its bytes. Bytes
 * ≥ 0x80 are accepted inside strings only (a byte-level token may hold part of a character;
 * the UTF-8 is the model's to get right, as with any other text).
 */

enum Mode {
  /** Before the top-level value: whitespace or `{`. */
  Start,
  /** A value is expected (after `:` or `,` in an array). */
  Value,
  /** After `[`: a value or `]`. */
  ValueOrEnd,
  /** After `{`: a key or `}`. */
  KeyOrEnd,
  /** After `,` in an object: a key. */
  Key,
  /** After a key: `:`. */
  Colon,
  /** After a value: `,` or the closing bracket of the innermost container. */
  AfterValue,
  String,
  StringEscape,
  /** `\u` and `hex` hex digits still to come. */
  StringUnicode,
  /** In a number; `num` says which part. */
  Number,
  /** In `true`, `false` or `null`; `literal` holds the bytes still to come. */
  Literal,
  /** The top-level object is closed. */
  Done,
}

enum Num {
  /** After `-`: a digit. */
  Sign,
  /** After a leading `0`: `.`, `e` or the end. */
  Zero,
  /** In the integer digits. */
  Int,
  /** After `.`: a digit. */
  Dot,
  Frac,
  /** After `e`: a sign or a digit. */
  Exp,
  /** After the exponent's sign: a digit. */
  ExpSign,
  ExpDigits,
}

const isWs = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
const isHex = (b: number) => isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);

export class JsonPrefix {
  private mode = Mode.Start;
  /** Open containers, innermost last: `o` object, `a` array. */
  private stack = '';
  private inKey = false;
  private num = Num.Int;
  private literal = '';
  private hex = 0;

  get done(): boolean {
    return this.mode === Mode.Done;
  }

  clone(): JsonPrefix {
    const c = new JsonPrefix();
    c.mode = this.mode;
    c.stack = this.stack;
    c.inKey = this.inKey;
    c.num = this.num;
    c.literal = this.literal;
    c.hex = this.hex;
    return c;
  }

  /** Feeds bytes; false (and the state is then undefined) when they leave the JSON prefixes. */
  feed(bytes: ArrayLike<number>): boolean {
    for (let i = 0; i < bytes.length; i++) if (!this.step(bytes[i])) return false;
    return true;
  }

  private step(b: number): boolean {
    switch (this.mode) {
      case Mode.Start:
        if (isWs(b)) return true;
        if (b !== 0x7b) return false; // json_object: the top level is an object
        this.stack = 'o';
        this.mode = Mode.KeyOrEnd;
        return true;
      case Mode.Value:
      case Mode.ValueOrEnd:
        if (isWs(b)) return true;
        if (b === 0x5d && this.mode === Mode.ValueOrEnd) return this.close('a');
        return this.startValue(b);
      case Mode.KeyOrEnd:
      case Mode.Key:
        if (isWs(b)) return true;
        if (b === 0x7d && this.mode === Mode.KeyOrEnd) return this.close('o');
        if (b !== 0x22) return false;
        this.mode = Mode.String;
        this.inKey = true;
        return true;
      case Mode.Colon:
        if (isWs(b)) return true;
        if (b !== 0x3a) return false;
        this.mode = Mode.Value;
        return true;
      case Mode.AfterValue:
        return this.afterValue(b);
      case Mode.String:
        if (b === 0x22) {
          this.mode = this.inKey ? Mode.Colon : Mode.AfterValue;
          this.inKey = false;
          return true;
        }
        if (b === 0x5c) this.mode = Mode.StringEscape;
        return b >= 0x20; // control characters must be escaped
      case Mode.StringEscape:
        if (b === 0x75) {
          this.mode = Mode.StringUnicode;
          this.hex = 4;
          return true;
        }
        this.mode = Mode.String;
        // " \ / b f n r t
        return (
          b === 0x22 ||
          b === 0x5c ||
          b === 0x2f ||
          b === 0x62 ||
          b === 0x66 ||
          b === 0x6e ||
          b === 0x72 ||
          b === 0x74
        );
      case Mode.StringUnicode:
        if (!isHex(b)) return false;
        if (--this.hex === 0) this.mode = Mode.String;
        return true;
      case Mode.Number:
        return this.number(b);
      case Mode.Literal:
        if (b !== this.literal.charCodeAt(0)) return false;
        this.literal = this.literal.slice(1);
        if (this.literal === '') this.mode = Mode.AfterValue;
        return true;
      case Mode.Done:
        return false;
    }
  }

  private startValue(b: number): boolean {
    if (b === 0x7b) {
      this.stack += 'o';
      this.mode = Mode.KeyOrEnd;
    } else if (b === 0x5b) {
      this.stack += 'a';
      this.mode = Mode.ValueOrEnd;
    } else if (b === 0x22) {
      this.mode = Mode.String;
      this.inKey = false;
    } else if (b === 0x2d) {
      this.mode = Mode.Number;
      this.num = Num.Sign;
    } else if (isDigit(b)) {
      this.mode = Mode.Number;
      this.num = b === 0x30 ? Num.Zero : Num.Int;
    } else if (b === 0x74 || b === 0x66 || b === 0x6e) {
      this.mode = Mode.Literal;
      this.literal = b === 0x74 ? 'rue' : b === 0x66 ? 'alse' : 'ull';
    } else return false;
    return true;
  }

  private afterValue(b: number): boolean {
    if (isWs(b)) return true;
    const top = this.stack[this.stack.length - 1];
    if (b === 0x2c) {
      this.mode = top === 'o' ? Mode.Key : Mode.Value;
      return true;
    }
    if (b === 0x7d) return this.close('o');
    if (b === 0x5d) return this.close('a');
    return false;
  }

  private close(kind: 'o' | 'a'): boolean {
    if (this.stack[this.stack.length - 1] !== kind) return false;
    this.stack = this.stack.slice(0, -1);
    this.mode = this.stack === '' ? Mode.Done : Mode.AfterValue;
    return true;
  }

  private number(b: number): boolean {
    const digit = isDigit(b);
    switch (this.num) {
      case Num.Sign:
        if (!digit) return false;
        this.num = b === 0x30 ? Num.Zero : Num.Int;
        return true;
      case Num.Zero:
      case Num.Int:
        if (digit && this.num === Num.Int) return true;
        if (b === 0x2e) this.num = Num.Dot;
        else if (b === 0x65 || b === 0x45) this.num = Num.Exp;
        else return this.endNumber(b);
        return true;
      case Num.Dot:
        if (!digit) return false;
        this.num = Num.Frac;
        return true;
      case Num.Frac:
        if (digit) return true;
        if (b === 0x65 || b === 0x45) {
          this.num = Num.Exp;
          return true;
        }
        return this.endNumber(b);
      case Num.Exp:
        if (b === 0x2b || b === 0x2d) {
          this.num = Num.ExpSign;
          return true;
        }
        if (!digit) return false;
        this.num = Num.ExpDigits;
        return true;
      case Num.ExpSign:
        if (!digit) return false;
        this.num = Num.ExpDigits;
        return true;
      case Num.ExpDigits:
        return digit || this.endNumber(b);
    }
  }

  /** A number ends at the first byte that cannot continue it; that byte follows the value. */
  private endNumber(b: number): boolean {
    this.mode = Mode.AfterValue;
    return this.afterValue(b);
  }
}

/**
 * One sequence's JSON constraint over token ids. The engine stops the sequence as soon as the
 * object is closed, so end tokens (`endTokenIds`: end-of-sequence and stop token ids) are never
 * allowed: inside a string their text would pass as content and end the answer unclosed.
 */
export class JsonConstraint {
  private readonly state = new JsonPrefix();

  constructor(
    private readonly tokenBytes: (tokenId: number) => ArrayLike<number>,
    private readonly endTokenIds: readonly number[],
  ) {}

  get done(): boolean {
    return this.state.done;
  }

  /** Whether `tokenId` may come next: its bytes keep the output a JSON object prefix. */
  allows(tokenId: number): boolean {
    if (this.state.done || this.endTokenIds.includes(tokenId)) return false;
    const bytes = this.tokenBytes(tokenId);
    return bytes.length > 0 && this.state.clone().feed(bytes);
  }

  advance(tokenId: number): void {
    this.state.feed(this.tokenBytes(tokenId));
  }

  /** `logits` with every token this state does not allow at -Infinity (a copy). */
  mask(logits: Float32Array): Float32Array {
    const out = new Float32Array(logits.length).fill(Number.NEGATIVE_INFINITY);
    for (let t = 0; t < logits.length; t++) if (this.allows(t)) out[t] = logits[t];
    return out;
  }
}
