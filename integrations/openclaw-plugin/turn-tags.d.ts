/** Types of turn-tags.js (plain JavaScript so OpenClaw loads the plugin without a build step). */
export declare const SESSION_HEADER: 'X-Session-Id';
export declare const TURN_TYPE_HEADER: 'X-Turn-Type';
export declare const MAX_TRACKED_RUNS: number;
export declare function turnTypeOfTrigger(trigger: string | undefined): 'main' | 'side' | undefined;
export declare function parseRequestId(requestId: unknown): { runId?: string; compactionOf?: string };
export declare class RunTriggers {
  constructor(max?: number);
  note(runId: unknown, trigger: unknown): void;
  get(runId: string | undefined): string | undefined;
  end(runId: unknown): void;
  readonly size: number;
}
export declare function tagsFor(
  options: { sessionId?: unknown; requestId?: unknown },
  runs: RunTriggers,
  kind?: { utility?: boolean },
): Record<string, string>;
