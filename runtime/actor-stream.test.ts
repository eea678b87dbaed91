import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import type http2 from 'node:http2';
import { afterEach, describe, expect, it } from 'vitest';
import { openActorSession } from './actor-stream.js';

/** A plain HTTP/2 server in its own process, so that it can be frozen (SIGSTOP). */
async function startPeer(): Promise<{ child: ChildProcess; address: string }> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      "require('node:http2').createServer().listen(0, '127.0.0.1', function () { console.log(this.address().port) })",
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
  return { child, address: `127.0.0.1:${chunk.toString().trim()}` };
}

const timing = { keepaliveMs: 50, pingTimeoutMs: 200 };

describe('openActorSession keepalive', () => {
  const children: ChildProcess[] = [];
  const sessions: http2.ClientHttp2Session[] = [];
  afterEach(() => {
    for (const s of sessions.splice(0)) s.destroy();
    for (const c of children.splice(0)) {
      c.kill('SIGCONT');
      c.kill('SIGKILL');
    }
  });

  async function open(address: string) {
    let gone = false;
    const session = openActorSession(address, () => (gone = true), timing);
    sessions.push(session);
    await once(session, 'connect');
    return { session, isGone: () => gone };
  }

  it('drops the session when the peer stops answering pings', async () => {
    const peer = await startPeer();
    children.push(peer.child);
    const { session, isGone } = await open(peer.address);
    const closed = new Promise((resolve) => session.once('close', resolve));
    peer.child.kill('SIGSTOP');
    await closed;
    expect(isGone()).toBe(true);
  });

  it('keeps the session when only this process was too busy to read the ping ack', async () => {
    const peer = await startPeer();
    children.push(peer.child);
    const { session, isGone } = await open(peer.address);
    // Right after the next ping is written, this process's loop is held well past the ping
    // timeout (as a long synchronous computation would): the ack arrives meanwhile and must
    // count, although the deadline timer is already due when the loop comes back.
    const blocked = new Promise<void>((resolve) => {
      const ping = session.ping;
      session.ping = ((...args: unknown[]) => {
        session.ping = ping;
        const sent = Reflect.apply(ping, session, args) as boolean;
        setImmediate(() => {
          const until = Date.now() + timing.pingTimeoutMs * 3;
          while (Date.now() < until) {
            // busy
          }
          resolve();
        });
        return sent;
      }) as typeof session.ping;
    });
    await blocked;
    await new Promise((r) => setTimeout(r, timing.pingTimeoutMs));
    expect(isGone()).toBe(false);
    expect(session.destroyed).toBe(false);
  });
});
