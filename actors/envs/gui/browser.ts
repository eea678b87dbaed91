/**
 * Headless Chromium through playwright-core. The browser is the distribution's (Debian
 * `chromium`), not a Playwright download, so its path is configurable: the option, else
 * `CLAWRAY_CHROMIUM_PATH`, else /usr/bin/chromium.
 */
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { type Browser, type BrowserContext, chromium } from 'playwright-core';
import { ConfigError } from '../../../common/errors.js';

export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';
export const CHROMIUM_PATH_ENV = 'CLAWRAY_CHROMIUM_PATH';

/**
 * On a closed network Chromium's own background traffic (QUIC probes, component and variation
 * updates, sync) only fails slowly, so it is switched off; /dev/shm is small in containers.
 * The resolver rule makes every host name but the task server's IP unresolvable, a browser-level
 * fence under the per-request one of `fenceNetwork`.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
  '--disable-features=Translate,MediaRouter,OptimizationHints',
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
];

export interface Viewport {
  width: number;
  height: number;
}

export const DEFAULT_VIEWPORT: Viewport = { width: 800, height: 600 };

/** The executable to launch: the given path, else the environment variable, else the default. */
export function resolveChromiumPath(path?: string): string {
  return path ?? process.env[CHROMIUM_PATH_ENV] ?? DEFAULT_CHROMIUM_PATH;
}

export interface LaunchOptions {
  chromiumPath?: string;
  /** How long the browser may take to start (default 30 s). */
  timeoutMs?: number;
}

export async function launchChromium(options: LaunchOptions = {}): Promise<Browser> {
  const executablePath = resolveChromiumPath(options.chromiumPath);
  try {
    await access(executablePath, constants.X_OK);
  } catch {
    throw new ConfigError(
      `gui: no Chromium executable at ${executablePath}; install it (apt-get install chromium) or set ` +
        `the gui setting chromiumPath or ${CHROMIUM_PATH_ENV}`,
      { fields: { chromiumPath: executablePath } },
    );
  }
  try {
    return await chromium.launch({
      executablePath,
      headless: true,
      args: [...CHROMIUM_ARGS],
      timeout: options.timeoutMs ?? 30_000,
      // Playwright's own signal handlers would kill the browser under a host that manages them.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
  } catch (e) {
    throw new Error(`gui: Chromium at ${executablePath} did not start: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

/**
 * Lets the context reach only `origin` (the task server): every other request, navigation and
 * WebSocket is aborted before it leaves the browser.
 */
export async function fenceNetwork(context: BrowserContext, origin: string): Promise<void> {
  const prefix = `${origin}/`;
  await context.route('**/*', (route) =>
    route.request().url().startsWith(prefix) ? route.continue() : route.abort('blockedbyclient'),
  );
  await context.routeWebSocket(
    () => true,
    (ws) => ws.close({ code: 1008, reason: 'blocked' }),
  );
}

/**
 * A fresh, isolated context for one episode: fixed viewport and scale, so coordinates mean the
 * same every time. The task server doubles as the context's proxy for every other destination
 * (loopback included): request interception stops requests, but Chromium still opens speculative
 * connections (a preconnect when a link is followed), and those now reach only the task server,
 * which serves nothing to a proxy client.
 */
export async function newEpisodeContext(
  browser: Browser,
  origin: string,
  viewport: Viewport,
): Promise<BrowserContext> {
  const context = await browser.newContext({
    viewport,
    screen: viewport,
    deviceScaleFactor: 1,
    locale: 'en-US',
    timezoneId: 'UTC',
    colorScheme: 'light',
    reducedMotion: 'reduce',
    serviceWorkers: 'block',
    acceptDownloads: false,
    proxy: { server: origin, bypass: `<-loopback>,${new URL(origin).host}` },
  });
  try {
    await fenceNetwork(context, origin);
  } catch (e) {
    await context.close().catch(() => {});
    throw e;
  }
  return context;
}
