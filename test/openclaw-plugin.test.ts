/**
 * The clawray OpenClaw plugin against the real `openclaw` package (installed from the npm
 * registry at test time, see helpers/openclaw-install.ts), with a capture server standing
 * where the model server would: what OpenClaw sends to a custom OpenAI-compatible provider, and
 * that the plugin tags every request with its session id and turn type — main for the user's
 * turns, side for memory flushes, compaction summaries, heartbeat and cron runs.
 *
 * `CLAWRAY_WRITE_OPENCLAW_FIXTURES=1` also writes the captured requests (trimmed, no
 * credentials) to test/fixtures/openclaw/, the corpus the server's side-call classifier is
 * unit-tested against.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CapturedRequest,
  type CaptureServer,
  startCaptureServer,
} from './helpers/openai-capture-server.js';
import {
  lastUserText,
  makeOpenClawHome,
  type OpenClawConfigOptions,
  offlineAttempts,
  runOpenClaw,
  runOpenClawAgent,
  startOpenClawGateway,
  trailingUserTexts,
} from './helpers/openclaw.js';
import { ensureOpenClaw } from './helpers/openclaw-install.js';

const log = (line: string) => console.log(`[openclaw-plugin] ${line}`);
const installed = await ensureOpenClaw(log);
if (!installed.ok) console.warn(`[openclaw-plugin] SKIPPED: ${installed.skip}`);

const FIXTURES = resolve(fileURLToPath(new URL('./fixtures/openclaw', import.meta.url)));
const writeFixtures = process.env.CLAWRAY_WRITE_OPENCLAW_FIXTURES === '1';

const systemText = (r: CapturedRequest) => {
  const first = (r.body?.messages as Array<{ role: string; content: unknown }> | undefined)?.[0];
  return first?.role === 'system' && typeof first.content === 'string' ? first.content : '';
};
const header = (r: CapturedRequest, name: string) => r.headers[name.toLowerCase()] as string | undefined;

type Kind = 'main' | 'memory_flush' | 'compaction' | 'heartbeat' | 'cron';

/** What a captured request is, from its text alone (the test knows what it sent). */
function kindOf(r: CapturedRequest): Kind | undefined {
  const text = lastUserText(r.body);
  if (systemText(r).startsWith('You are a context summarization assistant')) return 'compaction';
  if (text.startsWith('Pre-compaction memory flush.')) return 'memory_flush';
  if (trailingUserTexts(r.body).some((t) => t.startsWith('Follow the heartbeat monitor scratch context'))) {
    return 'heartbeat';
  }
  if (/^\[cron:[^\]]+\]/.test(text)) return 'cron';
  if (/\bTURN-\d+\b/.test(text)) return 'main';
  return undefined;
}

function trimmed(value: unknown, max = 1500): unknown {
  if (typeof value === 'string') {
    return value.length > max ? `${value.slice(0, max)}…[trimmed ${value.length - max} chars]` : value;
  }
  if (Array.isArray(value)) return value.map((v) => trimmed(v, max));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, trimmed(v, max)]));
  }
  return value;
}

function saveFixture(
  name: string,
  r: CapturedRequest,
  meta: Record<string, unknown>,
  openclawVersion: string,
) {
  if (!writeFixtures) return;
  mkdirSync(FIXTURES, { recursive: true });
  const headers = { ...r.headers };
  for (const secret of ['authorization', 'traceparent', 'host', 'content-length']) delete headers[secret];
  const fixture = {
    openclaw: openclawVersion,
    ...meta,
    request: { method: r.method, url: r.url, bytes: r.bytes, headers, body: trimmed(r.body) },
  };
  writeFileSync(join(FIXTURES, `${name}.json`), `${JSON.stringify(fixture, null, 2)}\n`);
  log(`wrote fixture ${name}.json (${r.bytes} bytes sent)`);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

async function until<T>(
  what: string,
  probe: () => T | undefined,
  seen: () => string,
  timeoutMs = 60_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; ${seen()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe.skipIf(!installed.ok)(
  'the clawray OpenClaw plugin on the real OpenClaw',
  // Each `openclaw agent` run is 10-20 s of CPU on its own (OpenClaw's start-up, its SQLite session
  // store); beside two busy test workers on a 2-core runner they take 2-3 times that.
  { timeout: 600_000 },
  () => {
    const install = installed.ok ? installed.install : undefined!;
    let capture: CaptureServer;
    const cleanups: Array<() => Promise<void> | void> = [];
    const base = (): OpenClawConfigOptions => ({
      baseUrl: capture.baseURL,
      apiKey: 'sk-test-not-a-secret',
      contextWindow: 4096,
      maxTokens: 64,
    });

    beforeAll(async () => {
      // Long replies grow the transcript past the compaction thresholds in a few turns.
      capture = await startCaptureServer({
        reply: (r) => `reply ${r.seq}: ${'lorem ipsum dolor sit amet '.repeat(20)}`,
      });
      log(`openclaw ${install.version} on node ${install.nodeVersion}; capture server ${capture.baseURL}`);
    });

    afterAll(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
      await capture?.close();
    });

    it('without the plugin, OpenClaw sends no session headers; the session id is only in prompt_cache_key', async () => {
      const home = makeOpenClawHome({ ...base(), plugin: false });
      cleanups.push(() => home.remove());
      const before = capture.chats().length;
      const run = await runOpenClawAgent(install, home.home, {
        sessionId: 'plain-1',
        message: 'TURN-0 hello',
      });
      expect(run.code, run.stderr).toBe(0);
      const sent = capture.chats().slice(before);
      expect(sent).toHaveLength(1);
      const [r] = sent;
      log(
        `default first request (tools denied, no bootstrap files): ${r.bytes} bytes, system prompt ${systemText(r).length} chars`,
      );
      expect(header(r, 'x-session-id')).toBeUndefined();
      expect(header(r, 'x-turn-type')).toBeUndefined();
      expect(header(r, 'authorization')).toBe('Bearer sk-test-not-a-secret');
      expect(r.body).toMatchObject({ model: 'tiny', stream: true, prompt_cache_key: 'plain-1:0' });
      expect(Object.keys(r.body!).sort()).toEqual(
        ['max_completion_tokens', 'messages', 'model', 'prompt_cache_key', 'stream', 'stream_options'].sort(),
      );
      saveFixture(
        'main-first-no-plugin',
        r,
        { kind: 'main', trigger: 'user', sessionId: 'plain-1', plugin: false },
        install.version,
      );
    });

    it('tags user turns main and memory flushes and compactions side, each with its session id', async () => {
      const home = makeOpenClawHome({
        ...base(),
        compaction: { memoryFlushBytes: 2000, compactBytes: 3000 },
      });
      cleanups.push(() => home.remove());
      const before = capture.chats().length;
      // The third turn crosses both thresholds: OpenClaw flushes memory, compacts, then answers.
      for (let turn = 1; turn <= 3; turn++) {
        const run = await runOpenClawAgent(install, home.home, {
          sessionId: 'sess-a',
          message: `TURN-${turn} hello`,
        });
        expect(run.code, run.stderr).toBe(0);
        log(`sess-a turn ${turn}: ${capture.chats().length - before} requests so far`);
      }
      const other = await runOpenClawAgent(install, home.home, { sessionId: 'sess-b', message: 'TURN-1 hi' });
      expect(other.code, other.stderr).toBe(0);

      const sent = capture.chats().slice(before);
      const kinds = sent.map(kindOf);
      log(
        `requests: ${sent.map((r, i) => `${kinds[i]}(${r.bytes}B, key ${r.body?.prompt_cache_key})`).join(', ')}`,
      );
      expect(kinds).not.toContain(undefined);
      expect(kinds).toContain('memory_flush');
      expect(kinds).toContain('compaction');
      expect(kinds.filter((k) => k === 'main')).toHaveLength(4);

      for (const [i, r] of sent.entries()) {
        const session = lastUserText(r.body).includes('TURN-1 hi') ? 'sess-b' : 'sess-a';
        expect(header(r, 'x-session-id'), `request ${i} (${kinds[i]})`).toBe(session);
        expect(header(r, 'x-turn-type'), `request ${i} (${kinds[i]})`).toBe(
          kinds[i] === 'main' ? 'main' : 'side',
        );
        if (kinds[i] === 'compaction') {
          // A compaction summary's cache key is the bare session id; turns add ":<compactions so far>".
          expect(r.body?.prompt_cache_key).toBe(session);
        } else {
          expect(r.body?.prompt_cache_key).toMatch(new RegExp(`^${session}:\\d+$`));
        }
      }
      // The plugin's one-line system prompt replaces OpenClaw's (7 KB even with tools denied).
      expect(sent[0].bytes).toBeLessThan(1000);

      const first = (k: Kind) => sent[kinds.indexOf(k)];
      saveFixture(
        'main-first',
        sent[0],
        { kind: 'main', trigger: 'user', sessionId: 'sess-a', plugin: true },
        install.version,
      );
      saveFixture(
        'main-followup',
        sent[1],
        { kind: 'main', trigger: 'user', sessionId: 'sess-a', plugin: true },
        install.version,
      );
      saveFixture(
        'memory-flush',
        first('memory_flush'),
        { kind: 'memory_flush', trigger: 'memory', sessionId: 'sess-a', plugin: true },
        install.version,
      );
      saveFixture(
        'compaction',
        first('compaction'),
        { kind: 'compaction', trigger: null, sessionId: 'sess-a', plugin: true },
        install.version,
      );
      const afterCompaction = sent.find(
        (r, i) => kinds[i] === 'main' && /^sess-a:[1-9]/.test(String(r.body?.prompt_cache_key)),
      );
      if (afterCompaction) {
        saveFixture(
          'main-after-compaction',
          afterCompaction,
          { kind: 'main', trigger: 'user', sessionId: 'sess-a', plugin: true },
          install.version,
        );
      }
    });

    it('tags heartbeat and cron runs of a running gateway side', async () => {
      const token = 'gateway-test-token';
      const port = await freePort();
      const options: OpenClawConfigOptions = {
        ...base(),
        gateway: { port, token },
        toolsAllow: ['session_status'],
      };
      const home = makeOpenClawHome(options);
      cleanups.push(() => home.remove());
      const before = capture.chats().length;
      const gateway = await startOpenClawGateway(install, home.home, token);
      cleanups.push(() => gateway.stop());
      log(`gateway ready on port ${port}`);
      const env = { OPENCLAW_GATEWAY_TOKEN: token };

      const turn = await runOpenClawAgent(install, home.home, {
        sessionId: 'sess-gw',
        message: 'TURN-1 via gateway',
        local: false,
        env,
      });
      expect(turn.code, turn.stderr).toBe(0);
      // A system event with --mode now wakes the heartbeat at once (its cadence is off).
      const event = await runOpenClaw(
        install,
        home.home,
        ['system', 'event', '--text', 'deploy finished', '--mode', 'now'],
        env,
      );
      expect(event.code, event.stderr).toBe(0);
      const seen = () =>
        `requests so far: ${JSON.stringify(
          capture
            .chats()
            .slice(before)
            .map((r) => lastUserText(r.body).slice(0, 80)),
        )}`;
      const heartbeat = await until(
        'a heartbeat request',
        () =>
          capture
            .chats()
            .slice(before)
            .find((r) => kindOf(r) === 'heartbeat'),
        seen,
      );
      const cron = await runOpenClaw(
        install,
        home.home,
        [
          'cron',
          'add',
          '--name',
          'probe',
          '--at',
          '1s',
          '--message',
          'cron says hello',
          '--session',
          'isolated',
          '--no-deliver',
        ],
        env,
      );
      expect(cron.code, cron.stderr).toBe(0);
      const cronRun = await until(
        'a cron request',
        () =>
          capture
            .chats()
            .slice(before)
            .find((r) => kindOf(r) === 'cron'),
        seen,
      );

      const main = capture
        .chats()
        .slice(before)
        .find((r) => kindOf(r) === 'main')!;
      expect(header(main, 'x-session-id')).toBe('sess-gw');
      expect(header(main, 'x-turn-type')).toBe('main');
      // The heartbeat runs in the agent's main session (a uuid), the cron job in an isolated one.
      expect(header(heartbeat, 'x-turn-type')).toBe('side');
      expect(header(heartbeat, 'x-session-id')).toMatch(/^[0-9a-f-]{36}$/);
      expect(heartbeat.body?.prompt_cache_key).toBe(`${header(heartbeat, 'x-session-id')}:0`);
      expect(header(cronRun, 'x-turn-type')).toBe('side');
      expect(cronRun.body?.prompt_cache_key).toMatch(/^openclaw-cron-[0-9a-f]+$/);
      log(
        `heartbeat ${heartbeat.bytes}B key ${heartbeat.body?.prompt_cache_key}; cron ${cronRun.bytes}B key ${cronRun.body?.prompt_cache_key}`,
      );
      saveFixture(
        'heartbeat',
        heartbeat,
        {
          kind: 'heartbeat',
          trigger: 'heartbeat',
          sessionId: header(heartbeat, 'x-session-id'),
          plugin: true,
        },
        install.version,
      );
      saveFixture(
        'cron',
        cronRun,
        { kind: 'cron', trigger: 'cron', sessionId: header(cronRun, 'x-session-id'), plugin: true },
        install.version,
      );
      await gateway.stop();
      log(`refused non-loopback attempts of the gateway: ${JSON.stringify(offlineAttempts(home.home))}`);
    });
  },
);
