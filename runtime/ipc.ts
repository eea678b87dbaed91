/**
 * The typed protocol between a node agent and the actor host processes it forks (Node IPC,
 * `serialization: 'advanced'`). A host announces `ready` as soon as it can serve; the agent
 * answers with `init` for the one actor the host will carry; the host replies `started` or
 * `failed` and, from then on, answers `metrics` requests and obeys `stop`.
 */
import type { ErrorInfoShape } from '../common/errors.js';
import type { GpuShare } from '../common/resources.js';

export interface InitCommand {
  type: 'init';
  actorId: string;
  incarnation: number;
  module: string;
  className: string;
  args: Uint8Array;
  jobId: string;
  nodeId: string;
  gpus: GpuShare[];
  maxConcurrency: number;
  env: Record<string, string>;
  headAddress: string;
  token: string;
  name: string;
  namespace: string;
}

export type AgentToHost =
  | InitCommand
  | { type: 'stop'; graceful: boolean; graceMs: number }
  | { type: 'metrics'; requestId: number };

export type HostToAgent =
  | { type: 'ready'; port: number; pid: number }
  | { type: 'started' }
  | { type: 'failed'; phase: InitPhase; error: ErrorInfoShape }
  | { type: 'metrics'; requestId: number; metrics: unknown[] };

export type InitPhase = 'import' | 'class' | 'constructor';

/** Exit codes of a host process and what they mean. */
export const HOST_EXIT = {
  STOPPED: 0,
  UNCAUGHT: 1,
  AGENT_GONE: 10,
  INIT_FAILED: 11,
  PROTOCOL: 12,
  SERVER_FAILED: 13,
  WASM_TRAP: 14,
} as const;

const EXIT_TEXT: Record<number, string> = {
  [HOST_EXIT.STOPPED]: 'stopped on request',
  [HOST_EXIT.UNCAUGHT]: 'crashed with an uncaught exception',
  [HOST_EXIT.AGENT_GONE]: 'exited because its node agent went away',
  [HOST_EXIT.INIT_FAILED]: 'failed to start the actor',
  [HOST_EXIT.PROTOCOL]: 'received a malformed command from its node agent',
  [HOST_EXIT.SERVER_FAILED]: 'could not start its gRPC server',
  [HOST_EXIT.WASM_TRAP]:
    'exited after a WebAssembly trap in a method (its memory could no longer be trusted)',
};

export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal) return `was killed by ${signal}`;
  if (code === null) return 'exited';
  return EXIT_TEXT[code] ?? `exited with code ${code}`;
}
