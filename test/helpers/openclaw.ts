/**
 * Driving the real OpenClaw gateway from a test: a throw-away HOME holding an `openclaw.json`
 * that points a custom OpenAI-compatible provider (`clawray`) at a test endpoint, loads the
 * clawray plugin from this repository, and keeps every OpenClaw request on loopback (no
 * channels, no update check, no hosted model catalog). `openclaw agent --local` runs one agent
 * turn in-process, no gateway needed; heartbeat and cron runs need `openclaw gateway run`.
 *
 * Every OpenClaw process runs with offline-guard.mjs preloaded: nothing but loopback is reached.
 *
 * The prompt is kept small on purpose: tools denied (11 tool schemas are ~10 KB), no workspace
 * bootstrap files, no skills, and the plugin's `systemPrompt` in place of OpenClaw's 7-39 KB
 * one, so a test policy with a byte-level tokenizer and a context of a few thousand tokens can
 * answer.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { OpenClawInstall } from './openclaw-install.js';

/** integrations/openclaw-plugin in this checkout. */
export const PLUGIN_DIR = resolve(
  fileURLToPath(new URL('../../integrations/openclaw-plugin', import.meta.url)),
);

const OFFLINE_GUARD = resolve(fileURLToPath(new URL('./offline-guard.mjs', import.meta.url)));
const OFFLINE_GUARD_LOG = 'offline-guard.log';

/** What OpenClaw processes run with `home` tried to reach beyond loopback (refused): `pid kind target` lines. */
export function offlineAttempts(home: string): string[] {
  const file = join(home, OFFLINE_GUARD_LOG);
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** The provider id the plugin owns (models are `clawray/<model>`). */
export const PROVIDER_ID = 'clawray';

export interface OpenClawConfigOptions {
  /** The OpenAI-compatible endpoint, `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  apiKey: string;
  modelId?: string;
  /** The model's context in tokens (OpenClaw budgets prompts and `max_completion_tokens` with it). */
  contextWindow: number;
  /** Most tokens a reply may have. */
  maxTokens: number;
  /** Load the clawray plugin (default true). */
  plugin?: boolean;
  /** The plugin's `systemPrompt` (default: a one-line prompt; null: OpenClaw's own). */
  systemPrompt?: string | null;
  /**
   * The only tools the agent may use (default: none, every tool denied). Cron runs refuse to
   * start with no tool at all, so a cron test allows one.
   */
  toolsAllow?: string[];
  /**
   * Force OpenClaw's housekeeping early: a pre-compaction memory flush once the transcript
   * reaches `memoryFlushBytes`, a compaction once it reaches `compactBytes`.
   */
  compaction?: { memoryFlushBytes: number; compactBytes: number };
  /** For `openclaw gateway run`: its port and token. */
  gateway?: { port: number; token: string };
}

export const DEFAULT_SYSTEM_PROMPT = 'You are a helpful assistant. Answer briefly.';

/** The `openclaw.json` for these options (JSON, which OpenClaw's JSON5 reader accepts). */
export function openClawConfig(o: OpenClawConfigOptions): Record<string, unknown> {
  const modelId = o.modelId ?? 'tiny';
  const systemPrompt = o.systemPrompt === undefined ? DEFAULT_SYSTEM_PROMPT : o.systemPrompt;
  const withPlugin = o.plugin ?? true;
  return {
    update: { checkOnStart: false },
    ...(o.gateway
      ? {
          gateway: {
            mode: 'local',
            port: o.gateway.port,
            bind: 'loopback',
            auth: { mode: 'token', token: o.gateway.token },
          },
        }
      : {}),
    models: {
      mode: 'replace',
      catalogRefresh: { enabled: false },
      providers: {
        [PROVIDER_ID]: {
          baseUrl: o.baseUrl,
          apiKey: o.apiKey,
          api: 'openai-completions',
          models: [
            {
              id: modelId,
              name: modelId,
              reasoning: false,
              input: ['text'],
              contextWindow: o.contextWindow,
              maxTokens: o.maxTokens,
              // The session id then also rides in the body: prompt_cache_key "<sessionId>:<n>".
              compat: { supportsPromptCacheKey: true },
            },
          ],
        },
      },
    },
    tools: o.toolsAllow ? { allow: o.toolsAllow } : { deny: ['*'] },
    agents: {
      defaults: {
        model: { primary: `${PROVIDER_ID}/${modelId}` },
        skipBootstrap: true,
        contextInjection: 'never',
        skills: [],
        heartbeat: { every: '0m', target: 'none' },
        ...(o.compaction
          ? {
              compaction: {
                maxActiveTranscriptBytes: o.compaction.compactBytes,
                memoryFlush: { enabled: true, forceFlushTranscriptBytes: o.compaction.memoryFlushBytes },
              },
            }
          : {}),
      },
    },
    ...(withPlugin
      ? {
          plugins: {
            load: { paths: [PLUGIN_DIR] },
            entries: {
              clawray: {
                enabled: true,
                hooks: { allowConversationAccess: true },
                config: systemPrompt === null ? {} : { systemPrompt },
              },
            },
          },
        }
      : {}),
  };
}

export interface OpenClawHome {
  /** The HOME OpenClaw runs with (its state is in `<home>/.openclaw`). */
  home: string;
  configPath: string;
  /** Rewrites the config (OpenClaw re-reads it on every command; a gateway hot-reloads it). */
  write(options: OpenClawConfigOptions): void;
  remove(): void;
}

export function makeOpenClawHome(options: OpenClawConfigOptions): OpenClawHome {
  const home = mkdtempSync(join(tmpdir(), 'clawray-openclaw-'));
  const stateDir = join(home, '.openclaw');
  mkdirSync(stateDir, { recursive: true });
  const configPath = join(stateDir, 'openclaw.json');
  const write = (o: OpenClawConfigOptions) =>
    writeFileSync(configPath, `${JSON.stringify(openClawConfig(o), null, 2)}\n`);
  write(options);
  return { home, configPath, write, remove: () => rmSync(home, { recursive: true, force: true }) };
}

/** The environment OpenClaw runs in: its own HOME, no update checks, nothing of the parent's OpenClaw or vitest. */
export function openClawEnv(
  install: OpenClawInstall,
  home: string,
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  // OpenClaw reads VITEST* as "inside OpenClaw's own test suite" (its gateway then never starts).
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(OPENCLAW_|VITEST|NODE_ENV$|TEST$)/.test(k)) env[k] = v;
  }
  return {
    ...env,
    HOME: home,
    PATH: `${join(install.nodeBin, '..')}:${process.env.PATH ?? ''}`,
    OPENCLAW_NO_AUTO_UPDATE: '1',
    OPENCLAW_DISABLE_BONJOUR: '1',
    CLAWHUB_DISABLE_TELEMETRY: '1',
    // Only loopback: every other lookup or connection fails and is logged (offline-guard.mjs).
    NODE_OPTIONS: `--import ${OFFLINE_GUARD}`,
    CLAWRAY_OFFLINE_GUARD_LOG: join(home, OFFLINE_GUARD_LOG),
    NO_COLOR: '1',
    FORCE_COLOR: '0',
    ...extra,
  };
}

export interface AgentRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `openclaw agent --local --session-id ID -m MESSAGE`: one agent turn, in-process. */
export function runOpenClawAgent(
  install: OpenClawInstall,
  home: string,
  args: { sessionId: string; message: string; timeoutMs?: number; local?: boolean; env?: NodeJS.ProcessEnv },
): Promise<AgentRun> {
  const argv = [
    install.entry,
    'agent',
    ...(args.local === false ? [] : ['--local']),
    '--session-id',
    args.sessionId,
    '-m',
    args.message,
  ];
  return new Promise((resolvePromise) => {
    execFile(
      install.nodeBin,
      argv,
      {
        env: openClawEnv(install, home, args.env),
        timeout: args.timeoutMs ?? 120_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: number }).code ?? 1) : 0;
        resolvePromise({ code: typeof code === 'number' ? code : 1, stdout, stderr });
      },
    );
  });
}

/** `openclaw CLI...` against a running gateway (cron, system events). */
export function runOpenClaw(
  install: OpenClawInstall,
  home: string,
  cliArgs: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 60_000,
): Promise<AgentRun> {
  return new Promise((resolvePromise) => {
    execFile(
      install.nodeBin,
      [install.entry, ...cliArgs],
      { env: openClawEnv(install, home, env), timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: number }).code ?? 1) : 0;
        resolvePromise({ code: typeof code === 'number' ? code : 1, stdout, stderr });
      },
    );
  });
}

export interface OpenClawGateway {
  child: ChildProcess;
  output: string[];
  /** SIGTERM to its process group, SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** `openclaw gateway run` in its own process group; resolves once it logs `ready`. */
export function startOpenClawGateway(
  install: OpenClawInstall,
  home: string,
  token: string,
  readyTimeoutMs = 90_000,
): Promise<OpenClawGateway> {
  const child = spawn(install.nodeBin, [install.entry, 'gateway', 'run'], {
    env: openClawEnv(install, home, { OPENCLAW_GATEWAY_TOKEN: token }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const output: string[] = [];
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const signal = (sig: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, sig);
    } catch {
      // Already gone.
    }
  };
  const gateway: OpenClawGateway = {
    child,
    output,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      // Helpers it started in its group (the spawn broker) go with it.
      signal('SIGKILL');
    },
  };
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      void gateway.stop(0);
      reject(new Error(`openclaw gateway did not become ready:\n${output.slice(-40).join('\n')}`));
    }, readyTimeoutMs);
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line) continue;
        output.push(line);
        if (process.env.CLAWRAY_DEBUG_OPENCLAW) console.log(`[gateway] ${line}`);
        if (/\[gateway\] ready\b/.test(line)) {
          clearTimeout(timer);
          resolvePromise(gateway);
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`openclaw gateway exited (${code}) before ready:\n${output.slice(-40).join('\n')}`));
    });
  });
}

/** The text of a chat request's last user message (OpenClaw sends strings or text parts). */
export function lastUserText(body: Record<string, unknown> | undefined): string {
  const messages = (body?.messages ?? []) as Array<{ role: string; content: unknown }>;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role !== 'user') continue;
    const c = messages[i].content;
    if (typeof c === 'string') return c;
    if (Array.isArray(c)) {
      return c
        .map((part) => (part && typeof part === 'object' && 'text' in part ? String(part.text) : ''))
        .join('');
    }
    return '';
  }
  return '';
}

/**
 * The texts of the user messages after the last non-user one: OpenClaw sends a heartbeat's
 * prompt and then, as a second user message, the pending system events.
 */
export function trailingUserTexts(body: Record<string, unknown> | undefined): string[] {
  const messages = (body?.messages ?? []) as Array<{ role: string; content: unknown }>;
  const texts: string[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i].role === 'user'; i--) {
    texts.unshift(lastUserText({ messages: [messages[i]] }));
  }
  return texts;
}
