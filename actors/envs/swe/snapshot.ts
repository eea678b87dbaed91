/**
 * Snapshots: a task's repository at its base commit, as a directory holding a git repository, made
 * once and copied for every episode workspace and every scoring run.
 *
 * From a git repository the base commit alone is fetched (`--depth=1`), so the snapshot's HEAD is
 * the task's real `base_commit` while the commits after it (which may hold the fix) stay out of the
 * agent's reach. A plain directory becomes one commit with clawray's fixed identity and date, so
 * the same directory always gives the same base commit.
 */
import { constants } from 'node:fs';
import { access, chmod, cp, lstat, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError } from '../../../common/errors.js';
import { GitError, git } from './git.js';

/** Kept out of agent diffs: byte code the agent's test runs leave behind. */
const EXCLUDES = '__pycache__/\n*.pyc\n.pytest_cache/\n';

export interface SnapshotSource {
  /** A git repository (with `baseCommit`) or a plain directory (without). */
  repo: string;
  baseCommit?: string;
}

async function isGitRepository(dir: string): Promise<boolean> {
  try {
    await git(['rev-parse', '--git-dir'], { cwd: dir });
    return true;
  } catch {
    return false;
  }
}

async function initRepository(dir: string): Promise<void> {
  await git(['-c', 'init.defaultBranch=main', 'init', '-q', '--template=', dir], { cwd: dir });
  await mkdir(join(dir, '.git', 'info'), { recursive: true });
  await writeFile(join(dir, '.git', 'info', 'exclude'), EXCLUDES);
}

/**
 * Makes the snapshot of `source` in `dir` (which must not exist) and returns its base commit:
 * the full hash of `source.baseCommit`, or of the commit made from a plain directory.
 */
export async function createSnapshot(source: SnapshotSource, dir: string): Promise<string> {
  const repo = resolve(source.repo);
  try {
    if (!(await stat(repo)).isDirectory()) throw new Error('not a directory');
    await access(repo, constants.R_OK);
  } catch {
    throw new ConfigError(`swe: repository ${repo} is not a readable directory`);
  }
  await mkdir(dir, { recursive: true });
  try {
    if (source.baseCommit !== undefined) {
      if (!(await isGitRepository(repo))) {
        throw new ConfigError(`swe: ${repo} is not a git repository, but the task names base_commit`);
      }
      let commit: string;
      try {
        commit = (
          await git(['rev-parse', '--verify', '--end-of-options', `${source.baseCommit}^{commit}`], {
            cwd: repo,
          })
        ).trim();
      } catch (e) {
        if (!(e instanceof GitError)) throw e;
        throw new ConfigError(`swe: base_commit ${source.baseCommit} is not a commit of ${repo}`);
      }
      await initRepository(dir);
      await git(['fetch', '-q', '--depth=1', '--no-tags', repo, commit], { cwd: dir });
      await git(['checkout', '-q', '-B', 'main', commit], { cwd: dir });
      // FETCH_HEAD names the host path of the source repository; the agent has no use for it.
      await rm(join(dir, '.git', 'FETCH_HEAD'), { force: true });
      return commit;
    }
    // A plain directory: its files as they are, without any repository it may hold.
    await cp(repo, dir, {
      recursive: true,
      verbatimSymlinks: true,
      filter: (src) =>
        src === repo ||
        !src
          .slice(repo.length + 1)
          .split('/')
          .includes('.git'),
    });
    await initRepository(dir);
    await git(['add', '-A'], { cwd: dir });
    await git(['commit', '-q', '--allow-empty', '--no-verify', '-m', 'Base snapshot'], { cwd: dir });
    return (await git(['rev-parse', 'HEAD'], { cwd: dir })).trim();
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}

/** A fresh copy of a snapshot (its repository included) at `dest`, which must not exist. */
export async function copySnapshot(snapshot: string, dest: string): Promise<void> {
  await cp(snapshot, dest, { recursive: true, verbatimSymlinks: true, errorOnExist: true, force: false });
}

async function makeWritable(path: string): Promise<void> {
  const st = await lstat(path);
  if (!st.isDirectory()) return;
  await chmod(path, 0o700);
  for (const entry of await readdir(path)) await makeWritable(join(path, entry));
}

/**
 * Removes a tree an agent may have worked in. Without root, directories it made unwritable
 * (`chmod -w`) would stop `rm`; they are opened up (never following links) and removal retried.
 */
export async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true });
  } catch {
    await makeWritable(path).catch(() => {});
    await rm(path, { recursive: true, force: true });
  }
}
