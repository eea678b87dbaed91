/**
 * `clawray start --local` as the README's Quickstart uses it, on real processes: the README's
 * own actor example run as a job exactly as written from a folder without node_modules, each
 * worker with its own GPU ids, worker /metrics with process metrics, nothing left behind when
 * `start` is SIGKILLed, a stale head.json noticed, and `clawray stop`.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distEntry, packageRoot } from '../common/package-root.js';
import { connect } from '../index.js';
import { eventually, fixture, pidAlive } from './helpers/processes.js';

const README = readFileSync(join(packageRoot(), 'README.md'), 'utf8');

/** The fenced block of the README whose first line is `firstLine`, as written. */
function readmeBlock(firstLine: string): string {
  const blocks = [...README.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].map((m) => m[1]);
  const block = blocks.find((b) => b.startsWith(`${firstLine}\n`));
  if (!block) throw new Error(`the README has no code block starting with ${firstLine}`);
  return block;
}

/** The README command line starting with `prefix`, without its comment, as argv for the CLI. */
function readmeCommand(prefix: string): string[] {
  const line = README.split('\n').find((l) => l.startsWith(prefix));
  if (!line) throw new Error(`the README has no line starting with ${prefix}`);
  const words = line.replace(/#.*$/, '').trim().split(/\s+/);
  expect(words.slice(0, 2)).toEqual(['npx', 'clawray']);
  return words.slice(2);
}

/** A clean environment for the CLI: no address or token from the test's own surroundings. */
const cliEnv = (home: string): NodeJS.ProcessEnv => ({
  ...process.env,
  CLAWRAY_HOME: home,
  CLAWRAY_ADDRESS: '',
  CLAWRAY_TOKEN: '',
  CLAWRAY_LOG_LEVEL: 'warn',
});

function clawray(args: string[], home: string, cwd?: string) {
  const r = spawnSync(process.execPath, [distEntry('cli/main'), ...args], {
    encoding: 'utf8',
    env: cliEnv(home),
    cwd,
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

interface Started {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
}

/** `clawray start ARGS`, resolved once it printed its summary (and the lines after it). */
async function startLocal(args: string[], home: string): Promise<Started> {
  const child = spawn(process.execPath, [distEntry('cli/main'), ...args], {
    env: cliEnv(home),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      if (line.startsWith('try: clawray status')) resolve();
    });
    createInterface({ input: child.stderr! }).on('line', (line) => lines.push(line));
    void exited.then((code) => reject(new Error(`start exited with ${code}:\n${lines.join('\n')}`)));
  });
  return { child, lines, exited };
}

const childPids = (pid: number): number[] =>
  spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean)
    .map(Number);

/** The pid of a process that has exited. */
const deadPid = (): number => spawnSync(process.execPath, ['-e', '0']).pid!;

describe("the README's local cluster", () => {
  const home = mkdtempSync(join(tmpdir(), 'clawray-local-start-'));
  const project = mkdtempSync(join(tmpdir(), 'clawray-readme-project-'));
  let started: Started | undefined;
  const savedHome = process.env.CLAWRAY_HOME;
  const savedAddress = process.env.CLAWRAY_ADDRESS;

  beforeAll(async () => {
    process.env.CLAWRAY_HOME = home;
    delete process.env.CLAWRAY_ADDRESS;
    // The Quickstart's cluster, on a free port instead of 6390 (tests run side by side).
    const args = readmeCommand('npx clawray start --local');
    expect(args).toEqual(['start', '--local', '--workers', '2', '--gpus-per-worker', '1']);
    started = await startLocal([...args, '--port', '0'], home);
  });

  afterAll(() => {
    if (started && started.child.exitCode === null) started.child.kill('SIGKILL');
    for (const [name, value] of [
      ['CLAWRAY_HOME', savedHome],
      ['CLAWRAY_ADDRESS', savedAddress],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    rmSync(home, { recursive: true, force: true });
    rmSync(project, { recursive: true, force: true });
  });

  it("runs the README's actor example as a job, as written, from a folder without node_modules", () => {
    writeFileSync(join(project, 'counter.mjs'), readmeBlock('// counter.mjs'));
    writeFileSync(join(project, 'main.mjs'), readmeBlock('// main.mjs'));
    const job = readmeCommand('npx clawray job submit --working-dir . --');
    expect(job).toEqual(['job', 'submit', '--working-dir', '.', '--', 'node', 'main.mjs']);
    expect(existsSync(join(project, 'node_modules'))).toBe(false);
    const { code, stdout, stderr } = clawray(job, home, project);
    expect(stderr).not.toContain('ERR_MODULE_NOT_FOUND');
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    // `console.log(await counter.call('inc', 5))` and the actor's view of where it runs.
    expect(stdout).toMatch(/^15$/m);
    expect(stdout).toMatch(/gpuIds: \[\]/);
    expect(stderr).toMatch(/SUCCEEDED/);

    // The unpacked folder is shared by every run of the same content from any install using
    // this home: a link left by an install since deleted (another clone) must not break it.
    const packages = join(home, 'packages');
    const links = readdirSync(packages)
      .map((name) => join(packages, name, 'node_modules', 'clawray'))
      .filter((link) => existsSync(link));
    expect(links).toHaveLength(1);
    rmSync(links[0]);
    symlinkSync(join(tmpdir(), 'a-clawray-clone-since-deleted'), links[0]);
    const again = clawray(job, home, project);
    expect(again.stderr).not.toContain('ERR_MODULE_NOT_FOUND');
    expect(again.code, `${again.stdout}\n${again.stderr}`).toBe(0);
    expect(again.stdout).toMatch(/^15$/m);
  });

  it('gives each worker GPU ids of its own, printed, and seen by actors as CUDA_VISIBLE_DEVICES', async () => {
    const printed = started!.lines.filter((l) => /^ {2}worker \d/.test(l));
    expect(printed.map((l) => /GPUs (\S+?),/.exec(l)?.[1])).toEqual(['0', '1']);
    const cluster = await connect();
    try {
      const status = await cluster.status();
      expect(status.nodes).toHaveLength(2);
      // Both GPUs taken at once: one actor on each worker.
      const actors = await Promise.all(
        [0, 1].map(() =>
          cluster.createActor({
            module: fixture('counter.mjs'),
            className: 'Counter',
            options: { numGpus: 1 },
          }),
        ),
      );
      const seen = await Promise.all(
        actors.map((a) => a.call('context') as Promise<{ nodeId: string; cudaVisibleDevices: string }>),
      );
      expect(seen.map((s) => s.cudaVisibleDevices).sort()).toEqual(['0', '1']);
      expect(new Set(seen.map((s) => s.nodeId)).size).toBe(2);
      for (const a of actors) await cluster.killActor(a);
    } finally {
      await cluster.close();
    }
  });

  it('serves each worker’s /metrics, with process and Node.js metrics', async () => {
    const ports = started!.lines.flatMap((l) => {
      const m = /^ {2}worker \d.*metrics on :(\d+)/.exec(l);
      return m ? [Number(m[1])] : [];
    });
    expect(ports).toHaveLength(2);
    const token = readFileSync(join(home, 'token'), 'utf8').trim();
    for (const port of ports) {
      const body = await (
        await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${token}` } })
      ).text();
      expect(body).toContain('clawray_worker_actor_processes{state="idle"}');
      expect(body).toMatch(/^process_resident_memory_bytes \d+/m);
      expect(body).toMatch(/^process_cpu_user_seconds_total /m);
      expect(body).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
    }
  });

  it("splits the machine's memory between the workers, as it splits its CPUs", () => {
    const { code, stdout, stderr } = clawray(['status', '--json'], home);
    expect(code, stderr).toBe(0);
    const nodes = (JSON.parse(stdout) as { nodes: { total: { memory_mb: number } }[] }).nodes;
    // What one worker alone offers (70% of the memory, as Ray), halved.
    const oneWorker = Math.floor((totalmem() / 1024 / 1024) * 0.7);
    expect(nodes.map((n) => n.total.memory_mb)).toEqual([1, 2].map(() => Math.floor(oneWorker / 2)));
  });

  it("logs an actor process's pino lines at their own level with their fields, not nested in a WARN", async () => {
    const cluster = await connect();
    try {
      const actor = await cluster.createActor({ module: fixture('counter.mjs'), className: 'Counter' });
      // `say` prints its argument on stdout (and `err:` + it on stderr, a plain line).
      const record = {
        level: 50,
        time: Date.now(),
        pid: 1,
        component: 'trainer',
        msg: 'an actor error line',
      };
      await actor.call('say', JSON.stringify(record));
      const line = await eventually(() =>
        started!.lines.find((l) => l.includes('an actor error line') && !l.includes('err:')),
      );
      expect(JSON.parse(line)).toMatchObject({
        level: 50,
        msg: 'an actor error line',
        component: 'trainer',
        actorId: actor.actorId,
        stream: 'stdout',
      });
      await cluster.killActor(actor);
    } finally {
      await cluster.close();
    }
  });

  it('leaves no worker or actor process behind when start is SIGKILLed, and the stale head.json is noticed', async () => {
    const start = started!.child;
    const workers = childPids(start.pid!);
    expect(workers).toHaveLength(2);
    const actorHosts = workers.flatMap(childPids);
    expect(actorHosts.length).toBeGreaterThanOrEqual(2);
    start.kill('SIGKILL');
    await started!.exited;
    await eventually(() => [...workers, ...actorHosts].every((pid) => !pidAlive(pid)), 15_000);

    // The killed head could not remove its record: the next command notices at once.
    expect(existsSync(join(home, 'head.json'))).toBe(true);
    const status = clawray(['status'], home);
    expect(status.code).toBe(2);
    expect(status.stderr).toMatch(
      new RegExp(`the head recorded in .*head\\.json \\(pid ${start.pid}, .*\\) is not running`),
    );
    expect(existsSync(join(home, 'head.json'))).toBe(false);
  });

  it('runs a job on an embedded cluster when head.json names a head that is gone', () => {
    writeFileSync(join(home, 'head.json'), JSON.stringify({ address: '127.0.0.1:1', pid: deadPid() }));
    const dir = join(project, 'driver');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'driver.mjs'),
      "import { connect } from 'clawray';\n" +
        'const cluster = await connect();\n' +
        "console.log('nodes', (await cluster.status()).nodes.length);\n" +
        'await cluster.close();\n',
    );
    const { code, stdout, stderr } = clawray(
      ['job', 'submit', '--working-dir', '.', '--', 'node', 'driver.mjs'],
      home,
      dir,
    );
    expect(stderr).toMatch(/head recorded in .* is not running/);
    expect(stderr).toMatch(/starting a local cluster for this job/);
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(stdout).toContain('nodes 1');
  });

  it('connect() says a recorded head is gone and starts an embedded cluster', async () => {
    writeFileSync(join(home, 'head.json'), JSON.stringify({ address: '127.0.0.1:1', pid: deadPid() }));
    const cluster = await connect(undefined, { local: { poolSize: 0 } });
    try {
      expect(cluster.address).not.toBe('127.0.0.1:1');
      expect(existsSync(join(home, 'head.json'))).toBe(false);
    } finally {
      await cluster.close();
    }
  });
});

describe("the README's actor example with `node main.mjs`, no cluster started (an embedded one)", () => {
  const home = mkdtempSync(join(tmpdir(), 'clawray-readme-embedded-'));
  const project = mkdtempSync(join(tmpdir(), 'clawray-readme-node-'));
  afterAll(() => {
    rmSync(home, { recursive: true, force: true });
    rmSync(project, { recursive: true, force: true });
  });

  /** `node FILE` in the project, which depends on clawray as `npm install /path/to/clawray` makes it. */
  function node(file: string) {
    const r = spawnSync(process.execPath, [file], {
      encoding: 'utf8',
      env: cliEnv(home),
      cwd: project,
      timeout: 60_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  beforeAll(() => {
    mkdirSync(join(project, 'node_modules'));
    symlinkSync(packageRoot(), join(project, 'node_modules', 'clawray'));
    writeFileSync(join(project, 'counter.mjs'), readmeBlock('// counter.mjs'));
    writeFileSync(join(project, 'main.mjs'), readmeBlock('// main.mjs'));
  });

  it('runs as written on any machine', () => {
    const { code, stdout, stderr } = node('main.mjs');
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(stdout).toMatch(/^15$/m);
    expect(stdout).toMatch(/gpuIds: \[\]/);
  });

  const hasGpus = spawnSync('nvidia-smi', ['-L']).status === 0;
  it.skipIf(hasGpus)(
    "asks for a GPU share, as the README's next paragraph does: one line names the fix",
    () => {
      const main = readmeBlock('// main.mjs');
      expect(main).toContain('numCpus: 1');
      writeFileSync(join(project, 'gpu.mjs'), main.replace('numCpus: 1', 'numGpus: 0.5'));
      const { code, stderr } = node('gpu.mjs');
      expect(code).not.toBe(0);
      const line = stderr.split('\n').find((l) => l.startsWith('InfeasibleError: '));
      expect(line, stderr).toMatch(
        /needs 0\.5 GPU, but the largest node .* has 0 GPU; no node in the cluster can ever run it\./,
      );
      expect(line).toContain('`clawray start --local --gpus-per-worker 1`');
      expect(line).toMatch(/or remove numGpus$/);
      expect(README).toContain('or remove numGpus``');
    },
  );
});

describe('clawray stop', () => {
  const home = mkdtempSync(join(tmpdir(), 'clawray-stop-'));
  let started: Started | undefined;
  afterAll(() => {
    if (started && started.child.exitCode === null) started.child.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  });

  it('stops the head and workers clawray start began on this machine, then finds nothing', async () => {
    started = await startLocal(['start', '--local', '--workers', '1', '--port', '0'], home);
    const workers = childPids(started.child.pid!);
    expect(workers).toHaveLength(1);
    const stop = clawray(['stop'], home);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toMatch(
      new RegExp(`stopped head 127\\.0\\.0\\.1:\\d+ \\(pid ${started.child.pid}\\)`),
    );
    expect(stop.stdout).toMatch(new RegExp(`stopped worker \\S+ \\(pid ${workers[0]}\\)`));
    // A graceful stop, as with Ctrl-C.
    expect(await started.exited).toBe(0);
    await eventually(() => !pidAlive(workers[0]));
    expect(existsSync(join(home, 'head.json'))).toBe(false);
    const again = clawray(['stop'], home);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('nothing to stop');
  });
});
