/**
 * `npm run bench -- NAME`: runs one benchmark and prints its result as ONE JSON line on
 * stdout; progress goes to stderr. Unknown name: prints the list and exits with status 2.
 */
process.env.CLAWRAY_LOG_LEVEL ??= 'warn';

type Bench = () => Promise<Record<string, unknown> | Record<string, unknown>[]>;

// Imported lazily so the log level above is set before any cluster code loads.
const BENCHES: Record<string, { describe: string; run: Bench }> = {
  actors: {
    describe:
      'actor calls (sync, pipelined) vs bare grpc-js and node:http2, warm-pool creation, scheduling, placement groups vs bare grpc-js unary',
    run: async () => (await import('./actors-bench.js')).runActorsBench(),
  },
  train: {
    describe: 'trainer tokens/s per TensorFlow.js backend on the tiny and small presets',
    run: async () => (await import('./train-bench.js')).runTrainBench(),
  },
  rollout: {
    describe:
      'rollout engine: small preset 16 vs 1 concurrent, KV cache vs recompute, TTFT, swap; top_p vs plain sampling on 152k tokens; a qwen3-0.6b shape line (CLAWRAY_BENCH_ROLLOUT picks sets)',
    run: async () => (await import('./rollout-bench.js')).runRolloutBench(),
  },
  allreduce: {
    describe:
      'ring all-reduce between actors: 2 and 4 ranks x 16 and 64 MiB fp32, algbw/busbw vs raw loopback TCP',
    run: async () => (await import('./allreduce-bench.js')).runAllreduceBench(),
  },
  envs: {
    describe: 'environment steps/s per track (oracle episodes of the built-in suites) vs bare sandbox runs/s',
    run: async () => (await import('./envs-bench.js')).runEnvsBench(),
  },
  pipeline: {
    describe: 'samples/s of the same RL job (toolcall, tiny model) asynchronous vs synchronous',
    run: async () => (await import('./pipeline-bench.js')).runPipelineBench(),
  },
  weights: {
    describe:
      'rollout weight updates at the qwen3-0.6b shape: load seconds, full vs LoRA-only (delta sync) update bytes and seconds',
    run: async () => (await import('./weights-bench.js')).runWeightsBench(),
  },
  buffer: {
    describe:
      'trajectory buffer appends/s and reads+acks/s, in memory and on Redis Streams, vs redis-benchmark XADD',
    run: async () => (await import('./buffer-bench.js')).runBufferBench(),
  },
};

function usage(): string {
  const lines = Object.entries(BENCHES).map(([name, b]) => `  ${name.padEnd(10)} ${b.describe}`);
  return `usage: npm run bench -- NAME\n\nbenchmarks:\n${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const name = process.argv[2];
  const bench = name === undefined ? undefined : BENCHES[name];
  if (!bench) {
    if (name !== undefined) process.stderr.write(`unknown benchmark: ${name}\n\n`);
    process.stderr.write(usage());
    process.exitCode = 2;
    return;
  }
  try {
    const result = await bench.run();
    // A bench with several figure sets prints one line per set.
    for (const line of Array.isArray(result) ? result : [result])
      process.stdout.write(`${JSON.stringify(line)}\n`);
  } catch (err) {
    process.stderr.write(
      `bench ${name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exitCode = 1;
  }
  // Everything was closed; if a handle still keeps the process alive, say which and exit anyway.
  setTimeout(() => {
    process.stderr.write(
      `bench ${name}: still alive 5 s after finishing: ${process.getActiveResourcesInfo().join(', ')}\n`,
    );
    process.exit(process.exitCode ?? 0);
  }, 5000).unref();
}

await main();
