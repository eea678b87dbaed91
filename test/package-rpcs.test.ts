/**
 * The head's package RPCs against a real `clawray head start` on port 0: DownloadPackage
 * answers a wrong or missing token, an unknown package and a bad hash with their gRPC status
 * at once (it used to leave the stream open for good), both to a bare grpc-js client and through
 * JobsClient, which turns them into named errors.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authMetadata } from '../common/auth.js';
import { AuthError, ConfigError, NotFoundError } from '../common/errors.js';
import { CHANNEL_OPTIONS } from '../common/grpc-server.js';
import { packWorkingDir } from '../jobs/package/working-dir.js';
import { JobsClient } from '../jobs/supervisor/jobs-client.js';
import type { HeadServiceClient } from '../proto/generated/clawray/v1/HeadService.js';
import type { PackageChunk__Output } from '../proto/generated/clawray/v1/PackageChunk.js';
import { protos } from '../proto/loader.js';
import { TestCluster, within } from './helpers/processes.js';

/** Generous: the point is that the call ends at all, not how fast. */
const ENDS_WITHIN_MS = 20_000;
const UNKNOWN_HASH = 'f'.repeat(64);

describe('DownloadPackage on a real head', () => {
  const tc = new TestCluster();
  const dir = mkdtempSync(join(tmpdir(), 'clawray-package-rpcs-'));
  let client: HeadServiceClient;
  let packed: Awaited<ReturnType<typeof packWorkingDir>>;

  beforeAll(async () => {
    await tc.startHead();
    const Service = protos().clawray.v1.HeadService;
    client = new Service(tc.head!.address, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
    writeFileSync(join(dir, 'main.mjs'), 'console.log("hi")\n');
    packed = await packWorkingDir(dir);
    const jobs = new JobsClient(tc.head!.address, tc.token);
    try {
      expect(await jobs.uploadPackage(packed.hash, packed.bytes)).toBe(true);
    } finally {
      jobs.close();
    }
  });

  afterAll(async () => {
    client?.close();
    await tc.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The chunks a bare grpc-js stream delivers, or the status it ended with. */
  async function download(
    hash: string,
    metadata: grpc.Metadata,
  ): Promise<{ bytes?: Buffer; error?: grpc.ServiceError }> {
    const stream = client.DownloadPackage({ hash }, metadata);
    const parts: Buffer[] = [];
    const read = (async () => {
      try {
        for await (const chunk of stream as AsyncIterable<PackageChunk__Output>) {
          parts.push(Buffer.from(chunk.data));
        }
        return { bytes: Buffer.concat(parts) };
      } catch (err) {
        return { error: err as grpc.ServiceError };
      }
    })();
    try {
      return await within(ENDS_WITHIN_MS, `DownloadPackage(${hash.slice(0, 12)}…)`, read);
    } finally {
      stream.cancel();
    }
  }

  const withToken = (token: string) => authMetadata(new grpc.Metadata(), token);

  it('sends the package to a client with the cluster token', async () => {
    const { bytes, error } = await download(packed.hash, withToken(tc.token));
    expect(error).toBeUndefined();
    expect(Buffer.compare(bytes!, Buffer.from(packed.bytes))).toBe(0);
  });

  it('answers UNAUTHENTICATED to a wrong token and to none', async () => {
    for (const metadata of [withToken('not-the-token'), new grpc.Metadata()]) {
      const { bytes, error } = await download(packed.hash, metadata);
      expect(bytes).toBeUndefined();
      expect(error?.code).toBe(grpc.status.UNAUTHENTICATED);
      expect(error?.details).toMatch(/wrong or missing cluster token/);
    }
  });

  it('answers NOT_FOUND to a package the head does not have', async () => {
    const { error } = await download(UNKNOWN_HASH, withToken(tc.token));
    expect(error?.code).toBe(grpc.status.NOT_FOUND);
    expect(error?.details).toContain(UNKNOWN_HASH);
  });

  it('answers INVALID_ARGUMENT to a hash that is not one', async () => {
    const { error } = await download('../../etc/passwd', withToken(tc.token));
    expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it('JobsClient.downloadPackage turns them into AuthError, NotFoundError and ConfigError', async () => {
    const good = new JobsClient(tc.head!.address, tc.token);
    const bad = new JobsClient(tc.head!.address, 'not-the-token');
    try {
      const bytes = await within(ENDS_WITHIN_MS, 'download', good.downloadPackage(packed.hash));
      expect(Buffer.compare(bytes, Buffer.from(packed.bytes))).toBe(0);

      const denied = await within(ENDS_WITHIN_MS, 'download', bad.downloadPackage(packed.hash)).catch(
        (e: unknown) => e,
      );
      expect(denied).toBeInstanceOf(AuthError);
      expect((denied as AuthError).retryable).toBe(false);

      const missing = await within(ENDS_WITHIN_MS, 'download', good.downloadPackage(UNKNOWN_HASH)).catch(
        (e: unknown) => e,
      );
      expect(missing).toBeInstanceOf(NotFoundError);
      expect((missing as NotFoundError).fields).toMatchObject({ hash: UNKNOWN_HASH });

      const invalid = await within(ENDS_WITHIN_MS, 'download', good.downloadPackage('../x')).catch(
        (e: unknown) => e,
      );
      expect(invalid).toBeInstanceOf(ConfigError);
    } finally {
      good.close();
      bad.close();
    }
  });
});
