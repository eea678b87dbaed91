#!/usr/bin/env node
// Regenerates the TypeScript types in proto/generated from proto/*.proto with the same loader
// options the runtime uses. `node scripts/proto-gen.mjs OUTDIR` writes elsewhere (the staleness
// test compares such a copy with the committed one).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = resolve(process.argv[2] ?? join(root, 'proto', 'generated'));
const options = JSON.parse(readFileSync(join(root, 'proto', 'loader-options.json'), 'utf8'));
const protos = readdirSync(join(root, 'proto'))
  .filter((f) => f.endsWith('.proto'))
  .sort();

const flags = ['--grpcLib=@grpc/grpc-js', `--outDir=${outDir}`, `-I=${join(root, 'proto')}`];
if (options.keepCase) flags.push('--keepCase');
flags.push(`--longs=${options.longs}`, `--enums=${options.enums}`);
for (const f of ['defaults', 'arrays', 'objects', 'oneofs']) if (options[f]) flags.push(`--${f}`);

rmSync(outDir, { recursive: true, force: true });
execFileSync(join(root, 'node_modules', '.bin', 'proto-loader-gen-types'), [...flags, ...protos], {
  cwd: join(root, 'proto'),
  stdio: 'inherit',
});

// The generator writes absolute source paths and extension-less relative imports; NodeNext
// resolution needs `.js`, and the committed files must not depend on where the clone lives.
for (const entry of readdirSync(outDir, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
  const file = join(entry.parentPath, entry.name);
  const text = readFileSync(file, 'utf8')
    .replaceAll(`// Original file: ${join(root, 'proto')}/`, '// Original file: proto/')
    .replace(/from '(\.{1,2}\/[^']+)'/g, "from '$1.js'");
  writeFileSync(file, text);
}
