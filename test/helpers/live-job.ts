/**
 * A personal clawray job in live mode (no `spec.user`) as a real child process:
 * `clawray rljob run job.yaml` on an embedded cluster, serving its policy on an
 * OpenAI-compatible endpoint at port 0 with a key from `serve.apiKeyEnv`. The test reads the
 * URL it prints, talks to it, and stops it with SIGTERM (the job then finishes its step,
 * checkpoints and prints its summary).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { distEntry } from '../../common/package-root.js';

export interface LiveJobOptions {
  /** The tiny model's context in tokens. */
  maxContext: number;
  /** Samples per training step. */
  batchSize: number;
  /** Most tokens a reply may have. */
  maxTokens: number;
  /** The endpoint's key (given to the job through `serve.apiKeyEnv`). */
  apiKey: string;
  name?: string;
  startTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface LiveJob {
  /** `http://127.0.0.1:PORT/v1` */
  baseURL: string;
  /** `http://127.0.0.1:PORT` */
  origin: string;
  output: string[];
  /** GET on the endpoint with the key; throws on a non-2xx answer. */
  get<T = Record<string, unknown>>(path: string): Promise<T>;
  /** SIGTERM, wait for the exit, return the summary line's JSON. */
  stop(timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Kills whatever is left (its process group) and removes its directory. */
  cleanup(): Promise<void>;
}

const KEY_ENV = 'CLAWRAY_E2E_JOB_KEY';

export function liveJobManifest(o: LiveJobOptions): string {
  return `apiVersion: clawray.dev/v1
kind: RLJob
metadata: { name: ${o.name ?? 'openclaw-live'} }
spec:
  track: personal
  method: rl
  model: { path: ./model, init: { preset: tiny, maxContext: ${o.maxContext} } }
  rollout: { batchSize: ${o.batchSize}, maxTokens: ${o.maxTokens} }
  serve: { port: 0, apiKeyEnv: ${KEY_ENV} }
`;
}

export async function startLiveJob(o: LiveJobOptions): Promise<LiveJob> {
  const dir = mkdtempSync(join(tmpdir(), 'clawray-live-job-'));
  writeFileSync(join(dir, 'job.yaml'), liveJobManifest(o));
  const child: ChildProcess = spawn(process.execPath, [distEntry('cli/main'), 'rljob', 'run', 'job.yaml'], {
    cwd: dir,
    env: {
      ...process.env,
      CLAWRAY_ADDRESS: '',
      CLAWRAY_HOME: join(dir, 'home'),
      CLAWRAY_LOG_LEVEL: 'info',
      [KEY_ENV]: o.apiKey,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const killGroup = () => {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  let onLine: (line: string) => void = () => {};
  for (const stream of [child.stdout!, child.stderr!]) {
    let rest = '';
    stream.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        output.push(line);
        onLine(line);
      }
    });
  }
  const cleanup = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      killGroup();
      await exited;
    }
    killGroup();
    rmSync(dir, { recursive: true, force: true });
  };
  const baseURL = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the live job did not start serving:\n${output.slice(-30).join('\n')}`)),
      o.startTimeoutMs ?? 120_000,
    );
    onLine = (line) => {
      if (!line.startsWith('{')) o.log?.(`job: ${line}`);
      const m = /serving the policy for live sessions on (http:\/\/[^\s]+\/v1)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the live job exited (${code}) before serving:\n${output.slice(-30).join('\n')}`));
    });
  }).catch(async (err) => {
    await cleanup();
    throw err;
  });
  // Progress: the job's own lines, not the embedded cluster's JSON logs.
  onLine = (line) => {
    if (!line.startsWith('{')) o.log?.(`job: ${line}`);
  };
  const origin = baseURL.replace(/\/v1$/, '');
  return {
    baseURL,
    origin,
    output,
    async get<T>(path: string): Promise<T> {
      const res = await fetch(`${origin}${path}`, { headers: { authorization: `Bearer ${o.apiKey}` } });
      if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    },
    async stop(timeoutMs = 60_000) {
      child.kill('SIGTERM');
      const timer = setTimeout(killGroup, timeoutMs);
      await exited;
      clearTimeout(timer);
      const line = output.find((l) => /\bsummary \{/.test(l));
      if (!line) throw new Error(`the live job printed no summary:\n${output.slice(-30).join('\n')}`);
      return JSON.parse(line.slice(line.indexOf('{'))) as Record<string, unknown>;
    },
    cleanup,
  };
}
