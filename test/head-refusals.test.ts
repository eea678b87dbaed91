/**
 * What a live client sends that the head must refuse, against a head in this process (memory
 * store, no nodes) and a bare grpc-js client, as any client may speak to it: a stream without
 * the token ends at once with UNAUTHENTICATED and leaves nothing behind; a CreateActor with a
 * path for a class, or with no spec, is INVALID_ARGUMENT naming the field; an upload whose bytes
 * are not the package its hash names is refused and not stored; one job's log is not another's
 * to write; ids that become paths and entrypoints the OS cannot start are refused at
 * submission, by the head and by the CLI (exit 2, one line).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidActorClassError } from '../common/actor-class.js';
import { authMetadata } from '../common/auth.js';
import { AuthError, ConfigError, PermissionDeniedError } from '../common/errors.js';
import { CHANNEL_OPTIONS } from '../common/grpc-server.js';
import { EntrypointTooLargeError, MAX_ENTRYPOINT_BYTES } from '../common/job-names.js';
import { silentLogger } from '../common/logger.js';
import { distEntry } from '../common/package-root.js';
import { InvalidIdError } from '../common/path-ids.js';
import { fromServiceError } from '../common/wire-status.js';
import type { OwnerRegistry } from '../head/index.js';
import { HeadServer } from '../head/index.js';
import { PackageHashMismatchError, packWorkingDir } from '../jobs/package/working-dir.js';
import { JobsClient } from '../jobs/supervisor/jobs-client.js';
import type { HasPackageReply__Output } from '../proto/generated/clawray/v1/HasPackageReply.js';
import type { HeadServiceClient } from '../proto/generated/clawray/v1/HeadService.js';
import type { ListJobsReply__Output } from '../proto/generated/clawray/v1/ListJobsReply.js';
import { protos } from '../proto/loader.js';
import type * as m from '../proto/messages.js';
import { Cluster } from '../runtime/index.js';
import { within } from './helpers/processes.js';

type UnaryMethod<Res> = (
  request: unknown,
  metadata: grpc.Metadata,
  callback: (err: grpc.ServiceError | null, reply: Res) => void,
) => void;

/** Generous: the point is that a call ends at all, not how fast. */
const ENDS_WITHIN_MS = 20_000;

describe('the head refuses what it must, over the wire', () => {
  let head: HeadServer;
  let client: HeadServiceClient;
  const dir = mkdtempSync(join(tmpdir(), 'clawray-head-refusals-'));
  const withToken = (token: string) => authMetadata(new grpc.Metadata(), token);
  const good = () => withToken(head.token);

  beforeAll(async () => {
    head = await HeadServer.start({ port: 0, writeLocalFiles: false }, silentLogger);
    const Service = protos().clawray.v1.HeadService;
    client = new Service(head.address, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
  });
  afterAll(async () => {
    client?.close();
    await head?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A unary call's reply or its error as a ServiceError. */
  function call<Res>(method: string, request: unknown, metadata = good()): Promise<Res> {
    return within(
      ENDS_WITHIN_MS,
      method,
      new Promise<Res>((resolve, reject) =>
        (client as unknown as Record<string, UnaryMethod<Res>>)[method](
          request,
          metadata,
          (err: grpc.ServiceError | null, reply: Res) => (err ? reject(err) : resolve(reply)),
        ),
      ),
    );
  }

  /** The events an owner session stream delivers before it ends, and the status it ended with. */
  async function ownerSession(
    request: Partial<m.OwnerSessionRequest>,
    metadata: grpc.Metadata,
  ): Promise<{ events: m.OwnerEvent__Output[]; error?: grpc.ServiceError }> {
    const stream = client.OpenOwnerSession(request, metadata);
    const events: m.OwnerEvent__Output[] = [];
    try {
      return await within(
        ENDS_WITHIN_MS,
        'OpenOwnerSession',
        (async () => {
          try {
            for await (const event of stream as AsyncIterable<m.OwnerEvent__Output>) events.push(event);
            return { events };
          } catch (error) {
            return { events, error: error as grpc.ServiceError };
          }
        })(),
      );
    } finally {
      stream.cancel();
    }
  }

  const owners = () => (head as unknown as { owners: OwnerRegistry }).owners;

  describe('streams', () => {
    it('ends an owner session with a wrong token or none at once, UNAUTHENTICATED, holding nothing', async () => {
      const sessions = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          ownerSession(
            { ownerId: `intruder-${i}`, pid: 1, hostname: 'x' },
            i % 2 ? withToken('not-the-token') : new grpc.Metadata(),
          ),
        ),
      );
      for (const { events, error } of sessions) {
        expect(events).toEqual([]);
        expect(error?.code).toBe(grpc.status.UNAUTHENTICATED);
        expect(fromServiceError(error, 'head')).toBeInstanceOf(AuthError);
      }
      expect(owners().size).toBe(0);
      expect(owners().connected('intruder-0')).toBe(false);
    });

    it('ends an owner session without an owner id with INVALID_ARGUMENT, and serves a good one', async () => {
      const { error } = await ownerSession({ ownerId: '' }, good());
      expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(error?.details).toContain('owner_id');

      const stream = client.OpenOwnerSession({ ownerId: 'owner-ok', pid: 1, hostname: 'x' }, good());
      try {
        const first = await within(
          ENDS_WITHIN_MS,
          'READY',
          new Promise<m.OwnerEvent__Output>((resolve, reject) => {
            stream.once('data', resolve);
            stream.once('error', reject);
          }),
        );
        expect(first.kind).toBe('READY');
        expect(owners().connected('owner-ok')).toBe(true);
      } finally {
        stream.cancel();
      }
    });

    it('ends an upload with a wrong token with UNAUTHENTICATED before reading it', async () => {
      const err = await within(
        ENDS_WITHIN_MS,
        'UploadPackage',
        new Promise<grpc.ServiceError | null>((resolve) => {
          const stream = client.UploadPackage(withToken('not-the-token'), (e) => resolve(e));
          stream.write({ hash: 'a'.repeat(64), data: Buffer.from('x'), sizeBytes: 1 });
          stream.end();
        }),
      );
      expect(err?.code).toBe(grpc.status.UNAUTHENTICATED);
    });
  });

  describe('CreateActor', () => {
    it('answers a request without a spec with INVALID_ARGUMENT naming it (it was INTERNAL)', async () => {
      const err = (await call('CreateActor', { className: '../../../../etc/passwd' }).catch(
        (e: unknown) => e,
      )) as grpc.ServiceError;
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toMatch(/^CreateActor needs a spec/);
      expect(fromServiceError(err, 'head')).toBeInstanceOf(ConfigError);
    });

    it('refuses a class name or module that is not one, naming the field, and records nothing', async () => {
      const spec = (over: Partial<m.ActorSpec>): m.ActorSpec => ({
        actorId: 'actor_refused',
        module: 'clawray',
        className: 'Counter',
        options: { resources: { numCpus: 0 } },
        ...over,
      });
      for (const [over, field] of [
        [{ className: '../../../../etc/passwd' }, 'className'],
        [{ className: '' }, 'className'],
        [{ module: 'clawray/../../../etc/passwd' }, 'module'],
        [{ module: '' }, 'module'],
      ] as const) {
        const err = (await call('CreateActor', { spec: spec(over) }).catch(
          (e: unknown) => e,
        )) as grpc.ServiceError;
        expect(err.code, JSON.stringify(over)).toBe(grpc.status.INVALID_ARGUMENT);
        const back = fromServiceError(err, 'head') as InvalidActorClassError;
        expect(back).toBeInstanceOf(InvalidActorClassError);
        expect(back.fields.field).toBe(field);
        expect(back.message).toContain(`invalid actor ${field}`);
      }
      const noId = (await call('CreateActor', { spec: spec({ actorId: '' }) }).catch(
        (e: unknown) => e,
      )) as grpc.ServiceError;
      expect(noId.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(noId.details).toMatch(/^invalid actor_id ""/);
      expect(head.status().actors).toEqual([]);
    });

    it('is refused the same way by the SDK, before anything is sent', async () => {
      const cluster = await Cluster.connect({ address: head.address, token: head.token });
      try {
        const err = await cluster
          .createActor({ module: 'clawray', className: '../../etc/passwd' })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidActorClassError);
        expect((err as Error).message).toMatch(/^invalid actor className "\.\.\/\.\.\/etc\/passwd"/);
      } finally {
        await cluster.close();
      }
    });
  });

  describe('UploadPackage', () => {
    it('stores nothing whose bytes do not hash to the declared hash, naming both', async () => {
      writeFileSync(join(dir, 'main.mjs'), 'console.log("a")\n');
      const a = await packWorkingDir(dir);
      writeFileSync(join(dir, 'main.mjs'), 'console.log("b")\n');
      const b = await packWorkingDir(dir);
      const jobs = new JobsClient(head.address, head.token);
      try {
        const err = await jobs.uploadPackage(a.hash, b.bytes).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PackageHashMismatchError);
        expect((err as Error).message).toContain(`its content hashes to ${b.hash}, not ${a.hash}`);
        expect((err as Error).message).toContain('nothing was stored');
        expect(await call<HasPackageReply__Output>('HasPackage', { hash: a.hash })).toEqual({
          exists: false,
        });

        expect(await jobs.uploadPackage(a.hash, a.bytes)).toBe(true);
        expect(await call<HasPackageReply__Output>('HasPackage', { hash: a.hash })).toEqual({
          exists: true,
        });
      } finally {
        jobs.close();
      }
    });
  });

  describe('jobs', () => {
    it("refuses to store a job's log for anyone but its own supervisor (PERMISSION_DENIED)", async () => {
      const jobs = new JobsClient(head.address, head.token);
      try {
        await jobs.submit({ submissionId: 'victim', entrypoint: 'echo hi' });
        const forged = { submissionId: 'victim', attempt: 1, data: Buffer.from('forged\n'), sizeBytes: 7 };
        for (const supervisorKey of ['', 'a-guess']) {
          const err = await jobs.storeLog({ ...forged, supervisorKey }).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(PermissionDeniedError);
          expect((err as Error).message).toContain(
            "the log of job 'victim' is stored only by its own supervisor",
          );
        }
        const raw = (await call('StoreJobLog', forged).catch((e: unknown) => e)) as grpc.ServiceError;
        expect(raw.code).toBe(grpc.status.PERMISSION_DENIED);
        const log = await jobs.logs('victim', 0).catch(() => undefined);
        expect(log?.text ?? '').not.toContain('forged');
      } finally {
        jobs.close();
      }
    });

    it('refuses submission ids that would become paths, naming the field and the rule', async () => {
      for (const submissionId of ['..', '.', 'a/b', '../../up', 'x'.repeat(129)]) {
        const err = (await call('SubmitJob', { submissionId, entrypoint: 'echo hi' }).catch(
          (e: unknown) => e,
        )) as grpc.ServiceError;
        expect(err.code, submissionId).toBe(grpc.status.INVALID_ARGUMENT);
        expect(err.details).toMatch(
          /^invalid submission_id .*: it becomes a file name, so use 1-128 letters/,
        );
        expect(fromServiceError(err, 'head')).toBeInstanceOf(InvalidIdError);
      }
      const listed = await call<ListJobsReply__Output>('ListJobs', {});
      expect(listed.jobs.map((j) => j.submissionId)).not.toContain('..');
    });

    it('refuses a 1 MB entrypoint with INVALID_ARGUMENT naming its size and the limit', async () => {
      const entrypoint = `echo ${'x'.repeat(1024 * 1024)}`;
      const err = (await call('SubmitJob', { submissionId: 'huge', entrypoint }).catch(
        (e: unknown) => e,
      )) as grpc.ServiceError;
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toContain(`the entrypoint is ${entrypoint.length} bytes`);
      expect(err.details).toContain(`at most ${MAX_ENTRYPOINT_BYTES} bytes`);
      expect(fromServiceError(err, 'head')).toBeInstanceOf(EntrypointTooLargeError);
      await expect(call('GetJob', { submissionId: 'huge' })).rejects.toMatchObject({
        code: grpc.status.NOT_FOUND,
      });
    });
  });
});

describe('the CLI refuses them before any cluster starts (exit 2, one line)', () => {
  const home = mkdtempSync(join(tmpdir(), 'clawray-cli-refusals-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  function clawray(args: string[], env: NodeJS.ProcessEnv = {}) {
    const result = spawnSync(process.execPath, [distEntry('cli/main'), ...args], {
      encoding: 'utf8',
      env: { ...process.env, CLAWRAY_HOME: home, CLAWRAY_ADDRESS: '', CLAWRAY_TOKEN: '', ...env },
      timeout: 30_000,
    });
    return { code: result.status, stderr: result.stderr };
  }
  const oneLine = (stderr: string) => {
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(stderr).not.toMatch(/\n\s+at /);
  };

  it('job submit --submission-id ..', () => {
    const { code, stderr } = clawray(['job', 'submit', '--submission-id', '..', '--', 'echo', 'hi']);
    expect(code).toBe(2);
    expect(stderr).toContain(
      `clawray: invalid --submission-id "..": it becomes a file name, so use 1-128 letters`,
    );
    oneLine(stderr);
  });

  it('job submit with an entrypoint past the limit', () => {
    // Two arguments under the OS's per-argument limit, together past the entrypoint's.
    const half = 'x'.repeat(40_000);
    const { code, stderr } = clawray(['job', 'submit', '--', 'echo', half, half]);
    expect(code).toBe(2);
    expect(stderr).toContain(`clawray: the entrypoint is ${'echo'.length + (1 + 40_000) * 2} bytes`);
    expect(stderr).toContain(`at most ${MAX_ENTRYPOINT_BYTES} bytes`);
    oneLine(stderr);
  });

  it('rljob run with CLAWRAY_JOB_ID=.. (the id names its checkpoint folder)', () => {
    const manifest = join(home, 'job.yaml');
    writeFileSync(
      manifest,
      [
        'apiVersion: clawray.dev/v1',
        'kind: RLJob',
        'metadata: { name: tiny }',
        'spec:',
        '  track: toolcall',
        '  method: rl',
        '  model: { path: ./model, init: { preset: tiny, seed: 0 } }',
        '',
      ].join('\n'),
    );
    const { code, stderr } = clawray(['rljob', 'run', manifest], { CLAWRAY_JOB_ID: '..' });
    expect(code).toBe(2);
    expect(stderr).toContain('clawray: invalid CLAWRAY_JOB_ID "..": it becomes a file name');
    oneLine(stderr);
  });

  it('job submit (and rljob run) of a manifest whose ./tasks a make step writes, not made yet', () => {
    const dir = join(home, 'terminal');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'make-tasks.mjs'), '/**\n * Writes the task suite.\n * @writes ./tasks\n */\n');
    const manifest = join(dir, 'rl.yaml');
    writeFileSync(
      manifest,
      [
        'apiVersion: clawray.dev/v1',
        'kind: RLJob',
        'metadata: { name: term }',
        'spec:',
        '  track: terminal',
        '  method: rl',
        '  model: { path: ./model, init: { preset: tiny, seed: 0 } }',
        '  env: { tasks: ./tasks }',
        '',
      ].join('\n'),
    );
    const before = readdirSync(home).sort();
    // No address: past the check, submit would start an embedded cluster and upload the dir.
    const { code, stderr } = clawray(['job', 'submit', manifest, '--json']);
    expect(code).toBe(2);
    expect(stderr).toBe(
      `clawray: ${manifest}:8:17: spec.env.tasks ./tasks does not exist; make it with: node ${relative(process.cwd(), join(dir, 'make-tasks.mjs'))}\n`,
    );
    oneLine(stderr);
    // Nothing was started or kept: no cluster files, no job log.
    expect(readdirSync(home).sort()).toEqual(before);
    const run = clawray(['rljob', 'run', manifest], { CLAWRAY_JOB_ID: 'term-1' });
    expect(run.code).toBe(2);
    // rljob run resolves in its own working dir (this process's): the path it names is the same field.
    expect(run.stderr).toMatch(/^clawray: .*rl\.yaml:8:17: spec\.env\.tasks \.\/tasks does not exist/);
    oneLine(run.stderr);
  });
});
