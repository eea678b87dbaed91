import { describe, expect, it } from 'vitest';
import { ActorHandle, type HandleRuntime } from './actor-handle.js';
import { decode, decodeArgs, encode, encodeArgs, type HandleDescriptor, type HandleLike } from './codec.js';

const roundTrip = <T>(value: T): unknown => decode(encode(value));

/** Never asked for a connection: no call is made in these tests. */
const runtime: HandleRuntime = {
  connectionFor() {
    throw new Error('no connection in a codec test');
  },
};

const descriptor: HandleDescriptor = {
  actorId: 'actor-1',
  className: 'Counter',
  name: 'counter',
  namespace: 'ns',
  maxTaskRetries: 2,
  maxPendingCalls: 10,
};

describe('codec round trips', () => {
  it('keeps numbers, strings, booleans and null', () => {
    for (const v of [
      0,
      1,
      -1,
      3.5,
      -2.25,
      2 ** 53,
      Number.MAX_VALUE,
      'hello',
      '',
      'ünïcødé ✓',
      true,
      false,
      null,
    ]) {
      expect(roundTrip(v)).toEqual(v);
    }
    expect(roundTrip(Number.NaN)).toBeNaN();
    expect(roundTrip(Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY);
  });

  it('keeps nested objects and arrays', () => {
    const value = { a: 1, b: [1, 'two', { c: [true, null, { d: 'deep' }] }], e: {}, f: [] };
    expect(roundTrip(value)).toEqual(value);
  });

  it('keeps undefined, at top level, in arrays and in objects', () => {
    expect(roundTrip(undefined)).toBeUndefined();
    const arr = roundTrip([1, undefined, 3]) as unknown[];
    expect(arr).toHaveLength(3);
    expect(arr[1]).toBeUndefined();
    const obj = roundTrip({ a: undefined, b: 1 }) as Record<string, unknown>;
    expect('a' in obj).toBe(true);
    expect(obj.a).toBeUndefined();
  });

  it('keeps bigint, small, negative and beyond 64 bits', () => {
    expect(roundTrip(5n)).toBe(5n);
    expect(roundTrip(-3n)).toBe(-3n);
    expect(roundTrip(2n ** 63n - 1n)).toBe(2n ** 63n - 1n);
    expect(roundTrip(2n ** 70n)).toBe(2n ** 70n);
  });

  it('keeps Date', () => {
    const d = new Date('2024-05-06T07:08:09.123Z');
    const out = roundTrip(d);
    expect(out).toBeInstanceOf(Date);
    expect((out as Date).getTime()).toBe(d.getTime());
  });

  it('keeps Set', () => {
    const out = roundTrip(new Set([1, 'a', 2]));
    expect(out).toBeInstanceOf(Set);
    expect([...(out as Set<unknown>)]).toEqual([1, 'a', 2]);
  });

  it('turns a Map with string keys into a plain object', () => {
    expect(roundTrip(new Map([['a', 1]]))).toEqual({ a: 1 });
  });

  it('keeps Buffer as Buffer and Uint8Array as Uint8Array', () => {
    const buf = roundTrip(Buffer.from([1, 2, 255]));
    expect(Buffer.isBuffer(buf)).toBe(true);
    expect([...(buf as Buffer)]).toEqual([1, 2, 255]);

    const u8 = roundTrip(new Uint8Array([0, 7, 9]));
    expect(u8).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(u8)).toBe(false);
    expect([...(u8 as Uint8Array)]).toEqual([0, 7, 9]);
  });

  it('keeps typed arrays with their type and values', () => {
    const f32 = roundTrip(new Float32Array([1.5, -2.25, 1e-3]));
    expect(f32).toBeInstanceOf(Float32Array);
    expect([...(f32 as Float32Array)]).toEqual([...new Float32Array([1.5, -2.25, 1e-3])]);

    const f64 = roundTrip(new Float64Array([Math.PI, -Math.E, 1e300]));
    expect(f64).toBeInstanceOf(Float64Array);
    expect([...(f64 as Float64Array)]).toEqual([Math.PI, -Math.E, 1e300]);

    const i32 = roundTrip(new Int32Array([-1, 0, 2 ** 31 - 1, -(2 ** 31)]));
    expect(i32).toBeInstanceOf(Int32Array);
    expect([...(i32 as Int32Array)]).toEqual([-1, 0, 2 ** 31 - 1, -(2 ** 31)]);
  });

  it('keeps a typed array that is a view into a larger buffer (only the view)', () => {
    const backing = new Float32Array([9, 1, 2, 3, 9]);
    const view = backing.subarray(1, 4);
    const out = roundTrip(view);
    expect(out).toBeInstanceOf(Float32Array);
    expect([...(out as Float32Array)]).toEqual([1, 2, 3]);
  });

  it('keeps typed arrays nested inside objects', () => {
    const out = roundTrip({ w: new Float32Array([1, 2]), ids: [new Int32Array([3])] }) as {
      w: Float32Array;
      ids: Int32Array[];
    };
    expect(out.w).toBeInstanceOf(Float32Array);
    expect(out.ids[0]).toBeInstanceOf(Int32Array);
    expect([...out.ids[0]]).toEqual([3]);
  });
});

describe('decode edge cases', () => {
  it('decodes empty input to undefined', () => {
    expect(decode(new Uint8Array(0))).toBeUndefined();
    expect(decode(Buffer.alloc(0))).toBeUndefined();
  });

  it('encodes to a Buffer', () => {
    expect(Buffer.isBuffer(encode({ a: 1 }))).toBe(true);
  });
});

describe('encodeArgs / decodeArgs', () => {
  it('round trips an argument list', () => {
    const args = [1, 'two', { three: [3] }, undefined, new Float32Array([4])];
    const out = decodeArgs(encodeArgs(args));
    expect(out).toHaveLength(5);
    expect(out.slice(0, 4)).toEqual([1, 'two', { three: [3] }, undefined]);
    expect(out[4]).toBeInstanceOf(Float32Array);
  });

  it('round trips no arguments', () => {
    expect(decodeArgs(encodeArgs([]))).toEqual([]);
  });

  it('gives [] for something that is not an array', () => {
    expect(decodeArgs(encode({ a: 1 }))).toEqual([]);
    expect(decodeArgs(encode(42))).toEqual([]);
    expect(decodeArgs(encode('x'))).toEqual([]);
    expect(decodeArgs(encode(null))).toEqual([]);
    expect(decodeArgs(new Uint8Array(0))).toEqual([]);
  });
});

describe('actor handles in values', () => {
  it('encodes a handle as its descriptor and rebuilds it through the factory', () => {
    const handle = new ActorHandle(runtime, descriptor);
    const seen: HandleDescriptor[] = [];
    const rebuilt = { rebuilt: true, describe: () => descriptor } satisfies HandleLike & { rebuilt: boolean };
    const out = decode(encode({ peer: handle, n: 1 }), (d) => {
      seen.push(d);
      return rebuilt;
    }) as { peer: unknown; n: number };
    expect(seen).toEqual([descriptor]);
    expect(Object.keys(seen[0]).sort()).toEqual(
      ['actorId', 'className', 'maxPendingCalls', 'maxTaskRetries', 'name', 'namespace'].sort(),
    );
    expect(out.peer).toBe(rebuilt);
    expect(out.n).toBe(1);
  });

  it('rebuilds live ActorHandles when the factory makes them', () => {
    const handles = [
      new ActorHandle(runtime, descriptor),
      new ActorHandle(runtime, { ...descriptor, actorId: 'actor-2', name: '' }),
    ];
    const out = decodeArgs(encodeArgs([handles]), (d) => new ActorHandle(runtime, d)) as [ActorHandle[]];
    expect(out[0]).toHaveLength(2);
    expect(out[0][0]).toBeInstanceOf(ActorHandle);
    expect(out[0][0].describe()).toEqual(descriptor);
    expect(out[0][1].actorId).toBe('actor-2');
    expect(out[0][1].name).toBe('');
  });

  it('throws a clear error when a handle arrives without a factory', () => {
    const bytes = encode([new ActorHandle(runtime, descriptor)]);
    expect(() => decode(bytes)).toThrow(/actor handle arrived outside of a clawray runtime/);
  });

  it('does not leak the factory past the decode call', () => {
    const bytes = encode(new ActorHandle(runtime, descriptor));
    decode(bytes, (d) => new ActorHandle(runtime, d));
    expect(() => decode(bytes)).toThrow(/outside of a clawray runtime/);
  });

  it('restores the outer factory after a nested decode', () => {
    const inner = encode(new ActorHandle(runtime, { ...descriptor, actorId: 'inner' }));
    const outerBytes = encode([new ActorHandle(runtime, descriptor), new ActorHandle(runtime, descriptor)]);
    const calls: string[] = [];
    const out = decode(outerBytes, (d) => {
      calls.push(`outer:${d.actorId}`);
      decode(inner, (d2) => {
        calls.push(`inner:${d2.actorId}`);
        return new ActorHandle(runtime, d2);
      });
      return new ActorHandle(runtime, d);
    }) as ActorHandle[];
    expect(out).toHaveLength(2);
    expect(calls).toEqual(['outer:actor-1', 'inner:inner', 'outer:actor-1', 'inner:inner']);
  });
});
