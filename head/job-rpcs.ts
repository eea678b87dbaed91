/**
 * The HeadService methods for jobs, finished jobs' logs and working-dir packages. Packages
 * live in the cluster store so a supervisor on any node (and a head restarted on Redis) can
 * fetch them; they are split into ≤ 1 MiB records because a store value is one JSON string.
 * An upload is stored only once its bytes are checked to be the package its hash names.
 */
import type * as grpc from '@grpc/grpc-js';
import { ConfigError, NotFoundError } from '../common/errors.js';
import { clientStream, type ServerGuard, serverStream, unary } from '../common/grpc-server.js';
import { checkPackageHash, verifyPackage } from '../jobs/package/working-dir.js';
import type { GetJobLogsRequest__Output } from '../proto/generated/clawray/v1/GetJobLogsRequest.js';
import type { JobRef__Output } from '../proto/generated/clawray/v1/JobRef.js';
import type { PackageChunk, PackageChunk__Output } from '../proto/generated/clawray/v1/PackageChunk.js';
import type { PackageRef, PackageRef__Output } from '../proto/generated/clawray/v1/PackageRef.js';
import type { ReportJobInfoRequest__Output } from '../proto/generated/clawray/v1/ReportJobInfoRequest.js';
import type { StoreJobLogRequest__Output } from '../proto/generated/clawray/v1/StoreJobLogRequest.js';
import type { SubmitJobRequest__Output } from '../proto/generated/clawray/v1/SubmitJobRequest.js';
import type { UpdateJobRequest__Output } from '../proto/generated/clawray/v1/UpdateJobRequest.js';
import { type JobManager, jobInfo } from './job-manager.js';
import type { ClusterStore } from './store/types.js';

export const PACKAGE_CHUNK_BYTES = 1024 * 1024;
/** Uploads above this are refused before they fill the head's memory. */
export const MAX_PACKAGE_BYTES = 512 * 1024 * 1024;

interface PackageManifest {
  sizeBytes: number;
  chunks: number;
  createdAtMs: number;
}

/** A package's key in the store: its content hash, which never holds `/` (job logs' keys do). */
const checkHash = (hash: string): string => checkPackageHash(hash);

export function jobHandlers(
  guard: ServerGuard,
  jobs: JobManager,
  store: ClusterStore,
): grpc.UntypedServiceImplementation {
  const h = <Req, Res>(name: string, fn: (req: Req) => Promise<Res>) => unary<Req, Res>(guard, name, fn);
  return {
    SubmitJob: h('SubmitJob', async (req: SubmitJobRequest__Output) => jobInfo(await jobs.submit(req))),
    GetJob: h('GetJob', async (req: JobRef__Output) => jobInfo(jobs.get(req.submissionId))),
    ListJobs: h('ListJobs', async () => ({ jobs: jobs.list().map(jobInfo) })),
    StopJob: h('StopJob', async (req: JobRef__Output) => jobInfo(await jobs.stop(req.submissionId))),
    DeleteJob: h('DeleteJob', async (req: JobRef__Output) => {
      await jobs.delete(req.submissionId);
      return {};
    }),
    UpdateJob: h('UpdateJob', async (req: UpdateJobRequest__Output) => jobInfo(await jobs.update(req))),
    ReportJobInfo: h('ReportJobInfo', async (req: ReportJobInfoRequest__Output) =>
      jobInfo(await jobs.reportInfo(req)),
    ),
    StoreJobLog: h('StoreJobLog', async (req: StoreJobLogRequest__Output) => {
      await jobs.storeLog(req);
      return {};
    }),
    GetJobLogs: h('GetJobLogs', async (req: GetJobLogsRequest__Output) =>
      jobs.readLog(req.submissionId, req.offset),
    ),
    HasPackage: h('HasPackage', async (req: PackageRef__Output) => ({
      exists: Boolean(await store.get('packages', checkHash(req.hash))),
    })),
    UploadPackage: clientStream(
      guard,
      'UploadPackage',
      (call: grpc.ServerReadableStream<PackageChunk__Output, PackageRef>) => receivePackage(call, store),
    ),
    DownloadPackage: serverStream(
      guard,
      'DownloadPackage',
      async (call: grpc.ServerWritableStream<PackageRef__Output, PackageChunk>) => {
        await sendPackage(call, store);
        call.end();
      },
    ),
  };
}

async function receivePackage(
  call: grpc.ServerReadableStream<PackageChunk__Output, PackageRef>,
  store: ClusterStore,
): Promise<PackageRef> {
  let hash = '';
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of call as AsyncIterable<PackageChunk__Output>) {
    if (!hash) hash = checkHash(chunk.hash);
    else if (chunk.hash !== hash) throw new ConfigError('one upload carried chunks of two packages');
    if (chunk.data.length > PACKAGE_CHUNK_BYTES) {
      throw new ConfigError(`package chunks must be ≤ ${PACKAGE_CHUNK_BYTES} bytes`);
    }
    total += chunk.data.length;
    if (total > MAX_PACKAGE_BYTES) {
      throw new ConfigError(`the package is larger than the head accepts (${MAX_PACKAGE_BYTES} bytes)`);
    }
    chunks.push(Buffer.from(chunk.data));
  }
  if (!hash) throw new ConfigError('an upload sent no chunks');
  if (await store.get('packages', hash)) return { hash };
  // Only what unpacking would accept under this hash is stored: a package that does not match
  // its name is refused now (PackageHashMismatchError), not by every job that unpacks it.
  await verifyPackage(hash, chunks);
  const manifest: PackageManifest = { sizeBytes: total, chunks: chunks.length, createdAtMs: Date.now() };
  // Chunks before the manifest, in one atomic write: a reader that sees the manifest finds
  // every chunk.
  await store.apply([
    ...chunks.map((c, i) => ({
      op: 'put' as const,
      table: 'packages' as const,
      id: `${hash}/${i}`,
      value: c.toString('base64'),
    })),
    { op: 'put', table: 'packages', id: hash, value: manifest },
  ]);
  return { hash };
}

async function sendPackage(
  call: grpc.ServerWritableStream<PackageRef__Output, PackageChunk>,
  store: ClusterStore,
): Promise<void> {
  const hash = checkHash(call.request.hash);
  const manifest = await store.get<PackageManifest>('packages', hash);
  if (!manifest) throw new NotFoundError(`no package ${hash} in the cluster store`, { fields: { hash } });
  for (let i = 0; i < manifest.chunks; i++) {
    // A client that went away stops the reads: nothing is left waiting for a `drain`.
    if (call.cancelled || call.destroyed) return;
    const data = await store.get<string>('packages', `${hash}/${i}`);
    if (data === undefined) throw new NotFoundError(`package ${hash} is missing chunk ${i}`);
    const ok = call.write({
      hash,
      data: Buffer.from(data, 'base64'),
      sizeBytes: i === 0 ? manifest.sizeBytes : 0,
    });
    if (!ok) await drainedOrGone(call);
  }
}

/** Resolves once the stream can take more, or once the client cancelled or it closed. */
function drainedOrGone(call: grpc.ServerWritableStream<PackageRef__Output, PackageChunk>): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.off('drain', done);
      call.off('cancelled', done);
      call.off('close', done);
      resolve();
    };
    call.once('drain', done);
    call.once('cancelled', done);
    call.once('close', done);
  });
}
