/**
 * The standard gRPC health service (grpc.health.v1.Health) on a head's or worker's gRPC port,
 * for Kubernetes gRPC probes, load balancers and `clawray health`. It answers without the
 * cluster token: kubelet cannot send one, and all it tells is SERVING or NOT_SERVING.
 *
 * Two names are served: "" (liveness: the process is up and its event loop answers) and the
 * server's own service name (readiness: a head that has loaded its store and listens, a worker
 * registered with its head and not draining).
 */
import * as grpc from '@grpc/grpc-js';
import { HealthImplementation, service as healthService, type ServingStatus } from 'grpc-health-check';
import { UnavailableError } from './errors.js';

export const LIVENESS_SERVICE = '';
export const HEAD_READINESS_SERVICE = 'clawray.v1.HeadService';
export const WORKER_READINESS_SERVICE = 'clawray.v1.NodeService';

export type { ServingStatus };

export class ServerHealth {
  private readonly impl: HealthImplementation;

  constructor(
    server: grpc.Server,
    private readonly readinessService: string,
  ) {
    this.impl = new HealthImplementation({
      [LIVENESS_SERVICE]: 'SERVING',
      [readinessService]: 'NOT_SERVING',
    });
    this.impl.addToServer(server);
  }

  /** Ready for traffic (readiness SERVING). */
  ready(): void {
    this.impl.setStatus(this.readinessService, 'SERVING');
  }

  /** Draining or stopping: out of rotation, still alive until the process exits. */
  notReady(): void {
    this.impl.setStatus(this.readinessService, 'NOT_SERVING');
  }
}

type HealthClient = grpc.Client & {
  Check(
    request: { service: string },
    options: grpc.CallOptions,
    callback: (err: grpc.ServiceError | null, reply?: { status: string }) => void,
  ): grpc.ClientUnaryCall;
};

const HealthClientCtor = grpc.makeGenericClientConstructor(
  healthService as unknown as grpc.ServiceDefinition,
  'Health',
) as unknown as new (
  address: string,
  credentials: grpc.ChannelCredentials,
) => HealthClient;

/** One Health/Check call; rejects with UnavailableError when nothing answers in time. */
export function checkHealth(address: string, service = LIVENESS_SERVICE, timeoutMs = 3000): Promise<string> {
  const client = new HealthClientCtor(address, grpc.credentials.createInsecure());
  return new Promise<string>((resolve, reject) => {
    client.Check({ service }, { deadline: Date.now() + timeoutMs }, (err, reply) => {
      client.close();
      if (err) {
        if (err.code === grpc.status.NOT_FOUND) resolve('SERVICE_UNKNOWN');
        else
          reject(
            new UnavailableError(`no health answer from ${address} within ${timeoutMs} ms: ${err.details}`, {
              cause: err,
              fields: { address },
            }),
          );
        return;
      }
      resolve(reply?.status ?? 'UNKNOWN');
    });
  });
}
