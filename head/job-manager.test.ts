/**
 * JobManager's refusals with its collaborators faked: what a submission may be (ids that become
 * paths, the entrypoint's size, the package hash) and who may store a job's log.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, NotFoundError, PermissionDeniedError } from '../common/errors.js';
import { EntrypointTooLargeError, MAX_ENTRYPOINT_BYTES, type SupervisorConfig } from '../common/job-names.js';
import { silentLogger } from '../common/logger.js';
import { InvalidIdError } from '../common/path-ids.js';
import type { SubmitJobRequest__Output } from '../proto/generated/clawray/v1/SubmitJobRequest.js';
import type * as m from '../proto/messages.js';
import { decodeArgs } from '../runtime/index.js';
import type { ActorDirectory } from './actor-directory.js';
import { JobManager, type JobRecord, jobInfo } from './job-manager.js';
import type { PlacementGroups } from './placement-groups.js';
import { MemoryStore } from './store/memory-store.js';

const submission = (over: Partial<SubmitJobRequest__Output> = {}): SubmitJobRequest__Output => ({
  submissionId: '',
  entrypoint: 'echo hi',
  workingDirHash: '',
  metadata: {},
  maxRetries: 0,
  stopGraceMs: 0,
  ...over,
});

describe('JobManager', () => {
  let jobs: JobManager;
  /** The supervisors the head asked for, as their constructor argument. */
  let supervisors: SupervisorConfig[];

  beforeEach(async () => {
    const store = new MemoryStore();
    await store.open();
    supervisors = [];
    const actors = {
      // The supervisor stays pending: these tests play its part themselves.
      create: (spec: m.ActorSpec__Output) => {
        supervisors.push(decodeArgs(spec.args)[0] as SupervisorConfig);
        return new Promise(() => {});
      },
      list: () => [],
      killJob: async () => 0,
    } as unknown as ActorDirectory;
    const groups = { removeJob: async () => 0 } as unknown as PlacementGroups;
    jobs = new JobManager({
      store,
      actors,
      groups,
      logger: silentLogger,
      self: () => ({ address: '127.0.0.1:1', token: 't' }),
      maxFinishedJobs: 100,
    });
  });

  const storeLog = (submissionId: string, text: string, supervisorKey: string, attempt = 1) =>
    jobs.storeLog({
      submissionId,
      attempt,
      data: Buffer.from(text),
      cutAtBytes: 0,
      sizeBytes: Buffer.byteLength(text),
      supervisorKey,
    });
  const logText = async (submissionId: string) => (await jobs.readLog(submissionId, 0)).text;

  describe('submit', () => {
    it('refuses a submission id that would become a path, naming submission_id and the rule', async () => {
      for (const submissionId of ['..', '.', 'a/b', '../up', 'x'.repeat(129), 'a b']) {
        const err = await jobs.submit(submission({ submissionId })).catch((e: unknown) => e);
        expect(err, submissionId).toBeInstanceOf(InvalidIdError);
        expect((err as Error).message).toMatch(
          /^invalid submission_id .*: it becomes a file name, so use 1-128 letters/,
        );
      }
      expect(jobs.list()).toEqual([]);
      expect(supervisors).toEqual([]);
      expect((await jobs.submit(submission({ submissionId: 'run.1_a-b' }))).submissionId).toBe('run.1_a-b');
    });

    it('refuses an entrypoint too long for the OS to start, before recording anything', async () => {
      const entrypoint = `echo ${'x'.repeat(1024 * 1024)}`;
      const err = await jobs.submit(submission({ entrypoint })).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EntrypointTooLargeError);
      expect((err as Error).message).toContain(`${entrypoint.length} bytes`);
      expect((err as Error).message).toContain(`at most ${MAX_ENTRYPOINT_BYTES} bytes`);
      expect(jobs.list()).toEqual([]);
    });

    it('refuses a working_dir_hash that is not a package hash', async () => {
      const err = await jobs.submit(submission({ workingDirHash: '../../etc' })).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(
        /^invalid working_dir_hash "\.\.\/\.\.\/etc": it is not a sha256/,
      );
      const unknown = await jobs
        .submit(submission({ workingDirHash: 'a'.repeat(64) }))
        .catch((e: unknown) => e);
      expect(unknown).toBeInstanceOf(NotFoundError);
    });
  });

  describe('storeLog', () => {
    it("takes a job's log only from its own supervisor: not from another job's, not without the key", async () => {
      await jobs.submit(submission({ submissionId: 'a' }));
      await jobs.submit(submission({ submissionId: 'b' }));
      const [keyA, keyB] = supervisors.map((s) => s.supervisorKey!);
      expect(keyA).toMatch(/^[\w-]{20,}$/);
      expect(keyB).not.toBe(keyA);

      for (const key of [keyB, '', 'guess']) {
        const err = await storeLog('a', 'forged', key).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PermissionDeniedError);
        expect((err as Error).message).toContain("the log of job 'a' is stored only by its own supervisor");
      }
      await expect(jobs.readLog('a', 0)).rejects.toThrow(NotFoundError);

      await storeLog('a', 'real output\n', keyA);
      expect(await logText('a')).toBe('real output\n');
      await expect(storeLog('a', 'forged', keyB)).rejects.toThrow(PermissionDeniedError);
      expect(await logText('a')).toBe('real output\n');
    });

    it("makes a new key for a restarted attempt: the replaced supervisor's no longer stores", async () => {
      await jobs.submit(submission({ submissionId: 'r', maxRetries: 1 }));
      const first = supervisors[0];
      await jobs.update({
        submissionId: 'r',
        status: 'FAILED',
        message: 'lost',
        hasExitCode: false,
        exitCode: 0,
        pid: 0,
        nodeId: '',
        attempt: 1,
        restartable: true,
      });
      const second = supervisors[1];
      expect(second.attempt).toBe(2);
      expect(second.supervisorKey).not.toBe(first.supervisorKey);
      // A late store of the replaced attempt changes nothing, as before the key existed.
      await storeLog('r', 'attempt 1', first.supervisorKey!, 1);
      await expect(jobs.readLog('r', 0)).rejects.toThrow(NotFoundError);
      await expect(storeLog('r', 'attempt 1 posing as 2', first.supervisorKey!, 2)).rejects.toThrow(
        PermissionDeniedError,
      );
      await storeLog('r', 'attempt 2', second.supervisorKey!, 2);
      expect(await logText('r')).toBe('attempt 2');
    });

    it('keeps the key out of what clients see, and only its hash in the record', async () => {
      const record = await jobs.submit(submission({ submissionId: 'k' }));
      const key = supervisors[0].supervisorKey!;
      expect(JSON.stringify(record)).not.toContain(key);
      expect(record.supervisorKeySha256).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(jobInfo(record))).not.toContain(record.supervisorKeySha256!);
    });

    it('takes the log of a job recorded by an older head (no key) by the attempt rule alone', async () => {
      const old: JobRecord = {
        submissionId: 'old',
        entrypoint: 'echo',
        status: 'RUNNING',
        message: '',
        createdAtMs: 1,
        supervisorActorId: 'actor_1',
        attempt: 1,
      };
      jobs.restore([old]);
      await storeLog('old', 'from an old supervisor', '');
      expect(await logText('old')).toBe('from an old supervisor');
    });
  });
});
