/**
 * Git on the host, for trusted repositories only: the task's source repository, the generated
 * built-in suite and the snapshots made from them. A directory an agent has written to is never
 * handed to host git (its `.git/config` could name commands, e.g. `core.fsmonitor`); those run in
 * the sandbox (see grader.ts).
 *
 * The environment is fixed so results do not depend on the user's git configuration and commits
 * are reproducible: no system or global config, a fixed identity and date.
 */
import { spawn } from 'node:child_process';
import { ClawrayError, registerErrorClass } from '../../../common/errors.js';

export const GIT = 'git';

/** Author, committer and date of every commit clawray makes, so the same tree gives the same hash. */
export const COMMIT_ENV: Readonly<Record<string, string>> = {
  GIT_AUTHOR_NAME: 'clawray',
  GIT_AUTHOR_EMAIL: 'swe@clawray.invalid',
  GIT_AUTHOR_DATE: '2024-01-01T00:00:00+0000',
  GIT_COMMITTER_NAME: 'clawray',
  GIT_COMMITTER_EMAIL: 'swe@clawray.invalid',
  GIT_COMMITTER_DATE: '2024-01-01T00:00:00+0000',
};

/** The variables that keep git away from the user's and the system's configuration. */
export const ISOLATED_GIT_ENV: Readonly<Record<string, string>> = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  LC_ALL: 'C',
};

export class GitError extends ClawrayError {
  constructor(
    readonly args: readonly string[],
    readonly code: number | null,
    readonly stderr: string,
  ) {
    super(`git ${args.join(' ')} failed (exit ${code}): ${stderr.trim().split('\n').slice(-3).join(' / ')}`, {
      fields: { args: args.join(' '), exitCode: code, stderr: stderr.slice(-2000) },
    });
  }
}
registerErrorClass(GitError);

export interface GitOptions {
  cwd: string;
  input?: string;
}

/** Runs git and returns its stdout; throws GitError on a non-zero exit. */
export function git(args: readonly string[], options: GitOptions): Promise<string> {
  // Repositories may belong to another user (a shared dataset checkout while we run as root).
  const full = ['-c', 'safe.directory=*', '-c', 'core.autocrlf=false', ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(GIT, full, {
      cwd: options.cwd,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: '/nonexistent',
        ...ISOLATED_GIT_ENV,
        ...COMMIT_ENV,
      },
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on('data', (d: Buffer) => out.push(d));
    child.stderr?.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => {
      const stderr = Buffer.concat(err).toString('utf8');
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else reject(new GitError(args, code, stderr));
    });
    if (child.stdin) {
      child.stdin.on('error', () => {});
      child.stdin.end(options.input);
    }
  });
}
