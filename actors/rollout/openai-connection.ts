/**
 * The client's side of a response, as the generating routes need it: whether the client went
 * away (so its generation stops and the engine's slot goes to someone who is still listening),
 * and whether a response reached the socket in full (so a turn is recorded only once served).
 */
import type { ServerResponse } from 'node:http';

export interface ClientWatch {
  readonly gone: boolean;
  /** Aborted when the client goes away before the response has been fully written. */
  readonly signal: AbortSignal;
}

/** Watches for the client going away before the response has been fully written. */
export function watchClose(res: ServerResponse): ClientWatch {
  const controller = new AbortController();
  const state = { gone: false, signal: controller.signal };
  res.once('close', () => {
    if (res.writableFinished) return;
    state.gone = true;
    controller.abort();
  });
  return state;
}

/**
 * Calls `written` once the whole response has been handed to the socket, or `lost` when the
 * client went away before that (exactly one of them).
 */
export function whenWritten(res: ServerResponse, written: () => void, lost: () => void): void {
  if (res.writableFinished) {
    written();
    return;
  }
  if (res.destroyed) {
    lost();
    return;
  }
  res.once('finish', written);
  res.once('close', () => {
    if (!res.writableFinished) lost();
  });
}
