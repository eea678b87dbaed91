/**
 * Preloaded (`node --import`) into the OpenClaw processes a test starts, so nothing they do
 * reaches beyond this machine: host names other than localhost do not resolve, and sockets to
 * addresses other than loopback fail at once. Each refusal is appended to
 * `$CLAWRAY_OFFLINE_GUARD_LOG` (`pid kind target`), so a test can say what OpenClaw tried.
 *
 * Why a guard: OpenClaw 2026.9 looks up its plugin registry (clawhub.ai) from the gateway even
 * with update checks and the hosted model catalog off; no setting turns that off.
 */
import dns from 'node:dns';
import { appendFileSync } from 'node:fs';
import net from 'node:net';

const LOG = process.env.CLAWRAY_OFFLINE_GUARD_LOG;

function isLoopback(host) {
  if (typeof host !== 'string' || host === '' || host === 'localhost') return true;
  const h = host.replace(/^\[|\]$/g, '');
  if (net.isIPv4(h)) return h.startsWith('127.') || h === '0.0.0.0';
  if (net.isIPv6(h)) return h === '::1' || h === '::' || h.startsWith('::ffff:127.');
  return h.endsWith('.localhost');
}

function refused(kind, target) {
  if (LOG) {
    try {
      appendFileSync(LOG, `${process.pid} ${kind} ${target}\n`);
    } catch {
      // The log is best effort; the refusal is not.
    }
  }
  const err = new Error(`offline test: ${kind} ${target} refused (only loopback is allowed)`);
  err.code = kind === 'lookup' ? 'ENOTFOUND' : 'ECONNREFUSED';
  return err;
}

const lookup = dns.lookup;
dns.lookup = function guardedLookup(hostname, options, callback) {
  if (isLoopback(hostname) || net.isIP(hostname)) return lookup.call(this, hostname, options, callback);
  const cb = typeof options === 'function' ? options : callback;
  const err = refused('lookup', hostname);
  process.nextTick(() => cb(err));
  return {};
};

const promisesLookup = dns.promises.lookup;
dns.promises.lookup = function guardedPromisesLookup(hostname, options) {
  if (isLoopback(hostname) || net.isIP(hostname)) return promisesLookup.call(this, hostname, options);
  return Promise.reject(refused('lookup', hostname));
};

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guardedConnect(...args) {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  const host =
    first && typeof first === 'object' ? first.host : typeof args[1] === 'string' ? args[1] : undefined;
  const isPipe = first && typeof first === 'object' ? first.path !== undefined : typeof first === 'string';
  if (!isPipe && host !== undefined && net.isIP(host) && !isLoopback(host)) {
    const err = refused('connect', host);
    process.nextTick(() => this.destroy(err));
    return this;
  }
  return connect.apply(this, args);
};
