/**
 * The head's public surface: the server the CLI (`clawray start --head`), the embedded local
 * cluster and the tests start, its default port, and the Redis store the k8s test drives
 * directly. Code outside head/ imports it from here only (biome.json's noRestrictedImports;
 * test/import-boundaries.test.ts).
 */
export { DEFAULT_HEAD_PORT } from './head-options.js';
export { HeadServer } from './head-server.js';
export type { OwnerRegistry } from './owners.js';
// The scheduler's micro-benchmark (bench/actors-bench.ts): already loaded with the head server.
export { benchScheduling } from './scheduler/bench.js';
export { RedisStore } from './store/redis-store.js';
