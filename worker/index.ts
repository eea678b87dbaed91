/**
 * The worker's public surface: the node agent the CLI (`clawray start`) and the embedded local
 * cluster start, and the memory a worker offers by default. Code outside worker/ imports it
 * from here only (biome.json's noRestrictedImports; test/import-boundaries.test.ts).
 */
export { NodeAgent } from './node-agent.js';
export { defaultMemoryMb } from './worker-options.js';
