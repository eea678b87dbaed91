import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**', 'dist/**'],
    pool: 'forks',
    // Cluster tests spawn many processes; two files at a time keeps a 2-core machine responsive.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    globalSetup: ['test/setup/global-setup.ts'],
    // In-process heads and workers (embedded clusters) log only problems during tests.
    env: { CLAWRAY_LOG_LEVEL: 'warn' },
  },
});
