/**
 * Renders the repository's kustomizations with `kubectl kustomize`, as users deploy them, from
 * a temporary copy of k8s/ that holds the secrets.env a user writes before the first deploy.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { packageRoot } from '../../common/package-root.js';
import type { K8sObject } from './k8s-schema.js';

export function kubectlVersion(): string | undefined {
  const r = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

export interface TestSecrets {
  token: string;
  redisPassword: string;
  storeUrl: string;
}

export class K8sTree {
  readonly root = mkdtempSync(join(tmpdir(), 'clawray-k8s-'));

  constructor(readonly secrets: TestSecrets) {
    cpSync(join(packageRoot(), 'k8s'), this.root, { recursive: true });
    writeFileSync(
      join(this.root, 'base', 'secrets.env'),
      `token=${secrets.token}\nredis-password=${secrets.redisPassword}\nstore-url=${secrets.storeUrl}\n`,
    );
  }

  /** Writes a kustomization of the test's own (e.g. an overlay plus a component) under the copy. */
  addKustomization(rel: string, body: string): void {
    mkdirSync(join(this.root, rel), { recursive: true });
    writeFileSync(join(this.root, rel, 'kustomization.yaml'), body);
  }

  render(rel: string): K8sObject[] {
    const out = execFileSync('kubectl', ['kustomize', join(this.root, rel)], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    return parseAllDocuments(out)
      .map((doc) => {
        if (doc.errors.length > 0) throw new Error(`${rel}: ${doc.errors[0].message}`);
        return doc.toJS() as K8sObject;
      })
      .filter(Boolean);
  }

  close(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** The one object of `kind` named `name`; throws naming what is there otherwise. */
export function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) {
    const have = objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ');
    throw new Error(`no ${kind}/${name} among ${have}`);
  }
  return found;
}

export function matches(selector: Record<string, string> | undefined, labels: Record<string, string> = {}) {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
}
