/**
 * Entry point of an actor host process, forked by a node agent. It binds its gRPC server at
 * once and reports `ready` (this is the warm pool's head start), then waits for `init`,
 * imports the actor's module, constructs the actor and serves calls until told to stop.
 * If the agent goes away the process takes its whole process group down with it.
 */
import { writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Counter, register as defaultRegistry, Histogram, Registry } from 'prom-client';
import { toErrorInfo } from '../common/errors.js';
import { formatAddress } from '../common/grpc-server.js';
import { LATENCY_BUCKETS_S } from '../common/metrics.js';
import { isSystemModule, systemModuleUrl } from '../common/system-modules.js';
import { setActorContext } from './actor-context.js';
import { ActorServer } from './actor-server.js';
import { ambientCluster, setAmbientCluster } from './ambient.js';
import { CallExecutor } from './call-executor.js';
import { decodeArgs, type HandleFactory } from './codec.js';
import { type AgentToHost, HOST_EXIT, type HostToAgent, type InitCommand, type InitPhase } from './ipc.js';
import { collectMetricsSources } from './metrics-sources.js';

const bindHost = process.env.CLAWRAY_BIND_HOST || '127.0.0.1';
const guard = {
  token: '',
  serverName: (): string => `actor process ${process.pid} at ${formatAddress(bindHost, server.port)}`,
};
const server: ActorServer = new ActorServer(guard);
const registry = new Registry();
let instance: Record<string, unknown> | undefined;
let started = false;

function send(message: HostToAgent): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected) return resolve();
    process.send!(message, undefined, {}, () => resolve());
  });
}

/** Exits; the node agent then kills what is left of our process group. */
function leave(code: number): never {
  process.exit(code);
}

/** With the agent gone nobody will clean up after us: take the whole process group down. */
function orphaned(): never {
  try {
    process.kill(-process.pid, 'SIGKILL');
  } catch {
    // Not a group leader (started by hand): exiting is all we can do.
  }
  process.exit(HOST_EXIT.AGENT_GONE);
}

const handleFactory: HandleFactory = (descriptor) => {
  const cluster = ambientCluster();
  if (!cluster) throw new Error('an actor handle arrived before the actor was initialised');
  return cluster.handleFactory(descriptor);
};

function hasAsyncMethods(obj: object): boolean {
  for (
    let proto = Object.getPrototypeOf(obj);
    proto && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const desc = Object.getOwnPropertyDescriptor(proto, name);
      const kind = typeof desc?.value === 'function' ? desc.value.constructor?.name : undefined;
      // As in Ray, an async generator (a streaming method) makes the actor async too.
      if (kind === 'AsyncFunction' || kind === 'AsyncGeneratorFunction') return true;
    }
  }
  return false;
}

async function importModule(specifier: string): Promise<Record<string, unknown>> {
  if (specifier.startsWith('file:') || specifier.startsWith('node:')) return import(specifier);
  // The cluster's own actors (the job supervisor): from this host's install, never the cwd's.
  if (isSystemModule(specifier)) return import(systemModuleUrl(specifier));
  // A package name resolves from the working directory, where the user's packages live; what is
  // not there (clawray's own actors, under a global or npx install) resolves from clawray itself.
  let resolved: string;
  try {
    resolved = createRequire(join(process.cwd(), 'noop.js')).resolve(specifier);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw err;
    // Missing in both places: the working directory's error is the one that says where to look.
    return import(specifier).catch(() => {
      throw err;
    });
  }
  return import(resolved);
}

async function init(command: InitCommand): Promise<void> {
  const gpuIds = [...new Set(command.gpus.map((g) => g.gpuId))];
  Object.assign(process.env, command.env, {
    CUDA_VISIBLE_DEVICES: gpuIds.join(','),
    CLAWRAY_ADDRESS: command.headAddress,
    CLAWRAY_ACTOR_ID: command.actorId,
    CLAWRAY_NODE_ID: command.nodeId,
    CLAWRAY_JOB_ID: command.jobId,
  });
  guard.token = command.token;
  setAmbientCluster({ address: command.headAddress, token: command.token, jobId: command.jobId });
  setActorContext({
    actorId: command.actorId,
    nodeId: command.nodeId,
    gpuIds,
    jobId: command.jobId,
    name: command.name,
    namespace: command.namespace,
    incarnation: command.incarnation,
  });
  registry.setDefaultLabels({ actor_class: command.className, job: command.jobId });

  let phase: InitPhase = 'import';
  try {
    const mod = await importModule(command.module);
    phase = 'class';
    const Cls = mod[command.className];
    if (typeof Cls !== 'function') {
      const exported = Object.keys(mod).join(', ') || '(nothing)';
      throw new TypeError(
        `module ${command.module} has no exported class '${command.className}' (it exports: ${exported})`,
      );
    }
    phase = 'constructor';
    const args = decodeArgs(command.args, handleFactory);
    instance = new (Cls as new (...a: unknown[]) => Record<string, unknown>)(...args);
  } catch (err) {
    await send({ type: 'failed', phase, error: toErrorInfo(err) });
    leave(HOST_EXIT.INIT_FAILED);
  }

  const calls = new Counter({
    name: 'clawray_actor_calls_total',
    help: 'Actor method calls served, by actor class and outcome',
    labelNames: ['actor_class', 'job', 'outcome'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'clawray_actor_call_seconds',
    help: 'Time actor methods took to run, by actor class',
    labelNames: ['actor_class', 'job'],
    buckets: LATENCY_BUCKETS_S,
    registers: [registry],
  });
  const maxConcurrency =
    command.maxConcurrency > 0 ? command.maxConcurrency : hasAsyncMethods(instance!) ? 1000 : 1;
  server.attach({
    actorId: command.actorId,
    incarnation: command.incarnation,
    executor: new CallExecutor(instance!, command.className, maxConcurrency, (err, method) => {
      // Written synchronously: the process exits on the next line.
      writeSync(2, `${command.className}.${method} trapped: ${(err as Error).stack ?? err}\n`);
      leave(HOST_EXIT.WASM_TRAP);
    }),
    handleFactory,
    onCall: (_method, seconds, ok) => {
      calls.inc({ outcome: ok ? 'ok' : 'error' });
      duration.observe(seconds);
    },
  });
  started = true;
  await send({ type: 'started' });
}

async function stop(graceful: boolean, graceMs: number): Promise<void> {
  if (graceful && started) {
    await server.drain(graceMs);
    const dispose = (instance as { [Symbol.asyncDispose]?: () => unknown } | undefined)?.[
      Symbol.asyncDispose
    ];
    const disposeSync = (instance as { [Symbol.dispose]?: () => unknown } | undefined)?.[Symbol.dispose];
    try {
      await dispose?.call(instance);
      disposeSync?.call(instance);
    } catch (err) {
      process.stderr.write(`actor shutdown hook failed: ${(err as Error).stack ?? err}\n`);
    }
  }
  leave(HOST_EXIT.STOPPED);
}

process.on('disconnect', orphaned);
// The agent may have died while this process was still loading, before the listener existed.
if (process.send && !process.connected) orphaned();
setInterval(() => {
  if (!process.connected) orphaned();
}, 2000).unref();
process.on('message', (message: AgentToHost) => {
  switch (message?.type) {
    case 'init':
      void init(message);
      break;
    case 'stop':
      void stop(message.graceful, message.graceMs);
      break;
    case 'metrics':
      void Promise.all([
        registry.getMetricsAsJSON(),
        defaultRegistry.getMetricsAsJSON(),
        collectMetricsSources(),
      ]).then(([own, user, extra]) =>
        send({ type: 'metrics', requestId: message.requestId, metrics: [...own, ...user, ...extra] }),
      );
      break;
    default:
      process.stderr.write(`unknown command from the node agent: ${JSON.stringify(message)}\n`);
      leave(HOST_EXIT.PROTOCOL);
  }
});

if (!process.send) {
  process.stderr.write('this is the clawray actor host; node agents start it, people do not\n');
  process.exit(HOST_EXIT.PROTOCOL);
}
server.bind(bindHost).then(
  (port) => send({ type: 'ready', port, pid: process.pid }),
  (err: Error) => {
    process.stderr.write(`cannot bind the actor server on ${bindHost}: ${err.message}\n`);
    process.exit(HOST_EXIT.SERVER_FAILED);
  },
);
