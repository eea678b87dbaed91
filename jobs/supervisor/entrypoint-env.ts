/**
 * What a job's entrypoint finds around it, wherever its supervisor runs: `clawray` on PATH
 * meaning this very install (so `clawray rljob run job.yaml` — an RL job's entrypoint — and
 * `clawray status` work on a node where clawray is not installed globally), `import 'clawray'`
 * resolving from an uploaded working dir (a `node_modules/clawray` link) and from anywhere else
 * (resolution hooks in NODE_OPTIONS), and the CLAWRAY_* variables of the job (the cluster
 * store's address too when it is Redis: an RL driver keeps its trajectory streams there).
 */
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  realpathSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { clawrayHome } from '../../common/home.js';
import type { DriverStore } from '../../common/job-names.js';
import { distEntry, packageRoot } from '../../common/package-root.js';

const shellQuote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

const tmpName = (path: string): string => `${path}.${process.pid}.${Date.now()}.tmp`;

/**
 * The directory holding a `clawray` shim that execs this install's CLI with this node binary.
 * Named by the shim's content, so installs sharing one clawray home never overwrite each
 * other's; written once, atomically (a rename), so concurrent supervisors cannot see half a
 * file.
 */
export function clawrayBinDir(home = clawrayHome()): string {
  const script = [
    '#!/bin/sh',
    '# The clawray CLI of one install, put on PATH for job entrypoints by the job supervisor.',
    `exec ${shellQuote(process.execPath)} ${shellQuote(distEntry('cli/main'))} "$@"`,
    '',
  ].join('\n');
  const dir = join(home, 'bin', createHash('sha256').update(script).digest('hex').slice(0, 12));
  const shim = join(dir, 'clawray');
  if (existsSync(shim)) return dir;
  mkdirSync(dir, { recursive: true });
  const tmp = tmpName(shim);
  writeFileSync(tmp, script, { mode: 0o755 });
  chmodSync(tmp, 0o755); // the umask may have taken bits away
  renameSync(tmp, shim);
  return dir;
}

/**
 * Makes `import 'clawray'` work for scripts in an unpacked working dir (packages never carry
 * `node_modules/`, and ESM ignores NODE_PATH): `node_modules/clawray` → this install.
 *
 * The unpacked dir is shared by every job with the same content, on every install that uses
 * this clawray home: a link left by another install (a clone since deleted, an older version)
 * dangles or points elsewhere, so it is replaced unless it already resolves to this install.
 * A real directory there is never touched.
 */
export function linkClawrayPackage(workingDir: string): void {
  const link = join(workingDir, 'node_modules', 'clawray');
  const target = packageRoot();
  try {
    if (!lstatSync(link).isSymbolicLink() || sameFile(link, target)) return;
  } catch {
    // Not there yet.
  }
  mkdirSync(join(workingDir, 'node_modules'), { recursive: true });
  const tmp = tmpName(link);
  symlinkSync(target, tmp, 'dir');
  // A rename replaces a stale link atomically: a job starting meanwhile sees one or the other.
  renameSync(tmp, link);
}

function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false; // dangling
  }
}

/**
 * The NODE_OPTIONS entry that makes `import 'clawray'` resolve to this install in any Node
 * process of a job, whatever folder its script is in (see clawray-resolve-hooks.ts). A file
 * URL, so a path with spaces needs no quoting inside NODE_OPTIONS.
 */
export function clawrayImportOption(): string {
  return `--import=${pathToFileURL(distEntry('jobs/supervisor/clawray-import')).href}`;
}

export interface EntrypointEnvOptions {
  address: string;
  token: string;
  submissionId: string;
  attempt: number;
  binDir: string;
  store?: DriverStore;
  /** Added to NODE_OPTIONS (after what the supervisor's already holds), e.g. clawrayImportOption(). */
  nodeOption?: string;
}

/** The supervisor's environment, made into a driver's. */
export function entrypointEnv(base: NodeJS.ProcessEnv, o: EntrypointEnvOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...base,
    PATH: base.PATH ? `${o.binDir}:${base.PATH}` : o.binDir,
    CLAWRAY_ADDRESS: o.address,
    CLAWRAY_TOKEN: o.token,
    CLAWRAY_JOB_ID: o.submissionId,
    CLAWRAY_JOB_ATTEMPT: String(o.attempt),
  };
  if (o.store) {
    env.CLAWRAY_STORE_URL = o.store.url;
    env.CLAWRAY_CLUSTER_NAME = o.store.cluster;
  }
  if (o.nodeOption) {
    const current = base.NODE_OPTIONS?.trim();
    // Never twice: a job's entrypoint may itself be a supervisor's environment passed along.
    if (!current?.split(/\s+/).includes(o.nodeOption)) {
      env.NODE_OPTIONS = current ? `${current} ${o.nodeOption}` : o.nodeOption;
    }
  }
  // The entrypoint is a driver, not this actor: it must not think it runs inside one, and it
  // sees the machine's GPUs (the supervisor reserved none).
  for (const name of ['CLAWRAY_ACTOR_ID', 'CLAWRAY_NODE_ID', 'CUDA_VISIBLE_DEVICES', 'CLAWRAY_BIND_HOST'])
    delete env[name];
  return env;
}
