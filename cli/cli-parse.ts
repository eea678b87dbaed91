/** Parsers for CLI flag values; a bad value names the flag. */
import { ConfigError } from '../common/errors.js';
import { findLocalHead, staleHeadMessage } from '../common/local-head.js';

export function int(flag: string) {
  return (value: string): number => {
    const n = value.trim() === '' ? Number.NaN : Number(value);
    if (!Number.isInteger(n) || n < 0)
      throw new ConfigError(`${flag} expects a whole number ≥ 0, got '${value}'`);
    return n;
  };
}

export function num(flag: string) {
  return (value: string): number => {
    const n = value.trim() === '' ? Number.NaN : Number(value);
    if (!Number.isFinite(n) || n < 0) throw new ConfigError(`${flag} expects a number ≥ 0, got '${value}'`);
    return n;
  };
}

/** One of `values` (any case); the message lists them. */
export function choice<T extends string>(flag: string, values: readonly T[]) {
  return (value: string): T => {
    const v = value.toLowerCase();
    if (!(values as readonly string[]).includes(v)) {
      throw new ConfigError(`${flag} expects one of ${values.join(', ')}, got '${value}'`);
    }
    return v as T;
  };
}

export function intList(flag: string) {
  return (value: string): number[] => value.split(',').filter(Boolean).map(int(flag));
}

/** `k=v,k2=v2` */
export function keyValues(flag: string) {
  return (value: string): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const pair of value.split(',').filter(Boolean)) {
      const i = pair.indexOf('=');
      if (i <= 0) throw new ConfigError(`${flag} expects key=value pairs separated by commas, got '${pair}'`);
      out[pair.slice(0, i)] = pair.slice(i + 1);
    }
    return out;
  };
}

export function jsonNumbers(flag: string) {
  return (value: string): Record<string, number> => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      throw new ConfigError(`${flag} expects JSON like '{"accelerator_type:H200": 1}', got '${value}'`);
    }
    if (
      !parsed ||
      typeof parsed !== 'object' ||
      Array.isArray(parsed) ||
      Object.values(parsed).some((v) => typeof v !== 'number')
    ) {
      throw new ConfigError(`${flag} expects a JSON object of numbers, got '${value}'`);
    }
    return parsed as Record<string, number>;
  };
}

/**
 * --address, else CLAWRAY_ADDRESS, else the head started on this machine (a record left by a
 * head that no longer runs is removed, and the refusal says so).
 */
export function resolveAddress(flag?: string): string {
  if (flag) return flag;
  if (process.env.CLAWRAY_ADDRESS) return process.env.CLAWRAY_ADDRESS;
  const local = findLocalHead();
  if (local.head) return local.head.address;
  const why = local.stale ? `${staleHeadMessage(local.stale)}. ` : '';
  throw new ConfigError(
    `no cluster address: ${why}pass --address HOST:PORT, set CLAWRAY_ADDRESS, or start a cluster on this machine (clawray start --local, or clawray head start)`,
  );
}
