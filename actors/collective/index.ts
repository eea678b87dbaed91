/** Ring all-reduce and broadcast between actor processes. */
export { createCollectiveGroup } from './driver.js';
export { CollectiveError } from './errors.js';
export { CollectiveGroup, type CollectiveGroupOptions, type ReduceOp } from './group.js';
export { type CollectiveInitOptions, CollectiveMember } from './member.js';
export type { LinkTransport, TransportOption } from './transport.js';
