/** The head's gRPC clients to node agents, one channel per node address. */
import * as grpc from '@grpc/grpc-js';
import { unaryCall } from '../common/grpc-client.js';
import { CHANNEL_OPTIONS } from '../common/grpc-server.js';
import { protos } from '../proto/loader.js';
import type * as m from '../proto/messages.js';

export class NodeClients {
  private readonly clients = new Map<string, grpc.Client>();

  constructor(private readonly token: string) {}

  startActor(address: string, request: m.StartActorRequest): Promise<m.StartActorReply__Output> {
    return unaryCall(this.client(address), 'StartActor', request, this.token, `worker ${address}`);
  }

  stopActor(address: string, request: m.StopActorRequest, deadlineMs = 15_000): Promise<m.Empty__Output> {
    return unaryCall(this.client(address), 'StopActor', request, this.token, `worker ${address}`, deadlineMs);
  }

  forget(address: string): void {
    this.clients.get(address)?.close();
    this.clients.delete(address);
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }

  private client(address: string): grpc.Client {
    let client = this.clients.get(address);
    if (!client) {
      const Service = protos().clawray.v1.NodeService;
      client = new Service(address, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
      this.clients.set(address, client);
    }
    return client;
  }
}
