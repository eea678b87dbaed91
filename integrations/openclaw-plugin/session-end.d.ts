/** Types of session-end.js (plain JavaScript so OpenClaw loads the plugin without a build step). */
export declare const ENDING_REASONS: ReadonlySet<string>;
export declare function endsSession(reason: unknown): boolean;
export declare function endSessionUrl(baseUrl: string): string;
export declare function endSession(o: {
  baseUrl: string;
  apiKey?: string;
  sessionId: string;
  timeoutMs?: number;
  fetchImpl?: typeof fetch;
}): Promise<{ ok: boolean; status: number }>;
