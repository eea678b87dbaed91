/**
 * How the CLI ends on an error: a person sees what was wrong and how to fix it, never a stack
 * trace for their own mistake (set CLAWRAY_DEBUG=1 to see stacks anyway).
 */
import { AuthError, ClawrayError, ConfigError } from '../common/errors.js';

export const EXIT_USAGE = 2;

export function exitOnError(err: unknown): never {
  const debug = Boolean(process.env.CLAWRAY_DEBUG);
  if (err instanceof ClawrayError) {
    process.stderr.write(`clawray: ${err.message}\n`);
    if (debug && err.stack) process.stderr.write(`${err.stack}\n`);
    process.exit(err instanceof ConfigError || err instanceof AuthError ? EXIT_USAGE : 1);
  }
  process.stderr.write(
    `clawray: unexpected error: ${err instanceof Error ? (debug ? err.stack : err.message) : String(err)}\n`,
  );
  if (!debug) process.stderr.write('(set CLAWRAY_DEBUG=1 for the stack trace)\n');
  process.exit(1);
}

/** Runs `stop` on SIGTERM/SIGINT, once; a second signal exits at once. */
export function onShutdownSignal(stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(130);
    stopping = true;
    process.stderr.write(`clawray: ${signal} received, shutting down\n`);
    stop().then(
      () => process.exit(0),
      (err) => exitOnError(err),
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
