/**
 * A small network of Linux network namespaces for multi-host tests without Kubernetes: every
 * host gets its own namespace with one veth (`eth0`) on a bridge that lives in a namespace of its
 * own, so nothing of the machine's network is touched. Names are unique per run; `destroy()`
 * kills whatever still runs in the namespaces and deletes them. Needs root and iproute2.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export interface Host {
  name: string;
  ns: string;
  ip: string;
  /** The bridge-side end of its veth, in the switch namespace. */
  port: string;
}

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Why namespaces cannot be made here, or undefined when they can. */
export function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'network namespaces need root (CI runs as root)';
  return undefined;
}

export class NetnsLab {
  readonly id = randomBytes(3).toString('hex');
  /** A /24 that exists only inside these namespaces. */
  readonly subnet = `10.${200 + (randomBytes(1)[0] % 50)}.${randomBytes(1)[0]}`;
  readonly switchNs = `clawray-${this.id}-sw`;
  readonly hosts = new Map<string, Host>();
  private readonly namespaces: string[] = [];

  constructor(names: string[]) {
    try {
      this.addNamespace(this.switchNs);
      ip('-n', this.switchNs, 'link', 'add', 'br0', 'type', 'bridge');
      ip('-n', this.switchNs, 'link', 'set', 'br0', 'up');
      for (const [i, name] of names.entries()) this.addHost(name, i + 2);
    } catch (err) {
      this.destroy();
      throw err;
    }
  }

  private addNamespace(ns: string): void {
    ip('netns', 'add', ns);
    this.namespaces.push(ns);
    ip('-n', ns, 'link', 'set', 'lo', 'up');
  }

  private addHost(name: string, octet: number): void {
    const ns = `clawray-${this.id}-${name}`;
    const port = `p${octet}`;
    const host: Host = { name, ns, ip: `${this.subnet}.${octet}`, port };
    this.addNamespace(ns);
    ip('-n', this.switchNs, 'link', 'add', port, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
    ip('-n', this.switchNs, 'link', 'set', port, 'master', 'br0', 'up');
    ip('-n', ns, 'addr', 'add', `${host.ip}/24`, 'dev', 'eth0');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
    this.hosts.set(name, host);
  }

  host(name: string): Host {
    const h = this.hosts.get(name);
    if (!h) throw new Error(`no host ${name}`);
    return h;
  }

  /** The command prefix that runs a program on `name`. */
  exec(name: string): string[] {
    return ['ip', 'netns', 'exec', this.host(name).ns];
  }

  /** Unplugs the host's cable: its processes keep running but nothing reaches them. */
  cut(name: string): void {
    ip('-n', this.switchNs, 'link', 'set', this.host(name).port, 'down');
  }

  destroy(): void {
    for (const ns of this.namespaces.splice(0).reverse()) {
      try {
        const pids = ip('netns', 'pids', ns).split('\n').filter(Boolean).map(Number);
        for (const pid of pids) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      } catch {
        // no such namespace any more
      }
      try {
        ip('netns', 'del', ns);
      } catch {
        // deleted already
      }
    }
  }
}
