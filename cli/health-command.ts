/**
 * `clawray health`: one gRPC health check of a head or worker, for container health checks
 * (the images' HEALTHCHECK) and scripts. Exit 0 when SERVING, 1 otherwise.
 */
import type { Command } from 'commander';
import { checkHealth } from '../common/health.js';
import { DEFAULT_HEAD_PORT } from '../head/index.js';
import { int } from './cli-parse.js';

/** Where `clawray health` looks without --address; a worker's container sets it to its --port. */
export const HEALTH_ADDRESS_ENV = 'CLAWRAY_HEALTH_ADDRESS';

export function registerHealthCommand(program: Command): void {
  program
    .command('health')
    .description('check a head or worker with the gRPC health service; exit 0 when it is SERVING')
    .option(
      '--address <host:port>',
      `gRPC address of the head or worker (default: ${HEALTH_ADDRESS_ENV}, else 127.0.0.1:${DEFAULT_HEAD_PORT})`,
    )
    .option(
      '--service <name>',
      'empty: the process is up; clawray.v1.HeadService or clawray.v1.NodeService: ready for work',
      '',
    )
    .option('--timeout-ms <ms>', 'how long to wait for the answer', int('--timeout-ms'), 3000)
    .action(async (o: { address?: string; service: string; timeoutMs: number }) => {
      const address = o.address ?? process.env[HEALTH_ADDRESS_ENV] ?? `127.0.0.1:${DEFAULT_HEAD_PORT}`;
      const status = await checkHealth(address, o.service, o.timeoutMs);
      process.stdout.write(`${status}\n`);
      if (status !== 'SERVING') process.exitCode = 1;
    });
}
