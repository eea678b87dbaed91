/**
 * How call arguments and results become bytes: msgpack (msgpackr), chosen once for the whole
 * runtime. It is several times faster than `v8.serialize` for the small values most calls
 * carry and keeps typed arrays, Buffers, Dates, Sets, bigint and undefined. Plain objects and
 * Maps with string keys both arrive as plain objects. ActorHandles travel as a small
 * descriptor and come back as live handles bound to the receiving process's cluster client.
 */
import { addExtension, Packr } from 'msgpackr';

export interface HandleDescriptor {
  actorId: string;
  className: string;
  name: string;
  namespace: string;
  maxTaskRetries: number;
  maxPendingCalls: number;
}

/** Implemented by ActorHandle; the codec only needs to know how to describe and rebuild one. */
export interface HandleLike {
  describe(): HandleDescriptor;
}

export type HandleFactory = (descriptor: HandleDescriptor) => HandleLike;

const HANDLE_EXTENSION_TYPE = 0x63; // 'c'

let handleClass: (abstract new (...args: never[]) => HandleLike) | undefined;
let decodingFactory: HandleFactory | undefined;

/** Called once by the handle module so handles anywhere in a value are encoded as descriptors. */
export function registerHandleClass(cls: abstract new (...args: never[]) => HandleLike): void {
  if (handleClass) return;
  handleClass = cls;
  addExtension({
    Class: cls as unknown as new () => unknown,
    type: HANDLE_EXTENSION_TYPE,
    write: (handle: HandleLike) => handle.describe(),
    read: (descriptor: HandleDescriptor) => {
      if (!decodingFactory) throw new Error('an actor handle arrived outside of a clawray runtime');
      return decodingFactory(descriptor);
    },
  });
}

const packr = new Packr({ useRecords: false, moreTypes: true, structuredClone: false });

export function encode(value: unknown): Buffer {
  return packr.pack(value);
}

/** Decodes a value; handles inside it are rebuilt by `factory`. */
export function decode(bytes: Uint8Array, factory?: HandleFactory): unknown {
  if (bytes.length === 0) return undefined;
  const previous = decodingFactory;
  decodingFactory = factory ?? previous;
  try {
    return packr.unpack(bytes);
  } finally {
    decodingFactory = previous;
  }
}

/** Constructor and call arguments travel as one encoded array. */
export const encodeArgs = (args: readonly unknown[]): Buffer => encode(args);

export function decodeArgs(bytes: Uint8Array, factory?: HandleFactory): unknown[] {
  const args = decode(bytes, factory);
  return Array.isArray(args) ? args : [];
}
