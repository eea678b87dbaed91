/**
 * `jobs/schema/rljob.json`, generated from the zod schema so editors (the YAML language server,
 * VS Code) validate and complete manifests with the very rules `clawray job submit` applies.
 * The shape rules carry over; cross-field rules and per-track defaults live only in code (the
 * descriptions name the defaults). Draft-07, the draft editors support best.
 *
 * Regenerate: `CLAWRAY_UPDATE_SCHEMA=1 npx vitest run jobs/manifest/json-schema.test.ts`, or
 * after a build `node dist/jobs/manifest/json-schema.js`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import { API_VERSION, rljobSchema } from './schema.js';

export const SCHEMA_ID = 'https://clawray.dev/schemas/rljob.json';

/** The repository's `jobs/schema/rljob.json`, from either the source tree or `dist/`. */
export function schemaFilePath(): string {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const root = join(here, here.includes(`${join('dist', 'jobs')}`) ? '../../..' : '../..');
  return join(root, 'jobs', 'schema', 'rljob.json');
}

export function manifestJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(rljobSchema, { io: 'input', target: 'draft-7', unrepresentable: 'any' });
  const { $schema, ...rest } = generated as Record<string, unknown>;
  return {
    $schema,
    $id: SCHEMA_ID,
    title: `clawray RLJob (${API_VERSION})`,
    ...rest,
  };
}

/** The file's exact text: stable key order, two-space indent, trailing newline. */
export function manifestJsonSchemaText(): string {
  return `${JSON.stringify(manifestJsonSchema(), null, 2)}\n`;
}

export function writeManifestJsonSchema(path = schemaFilePath()): string {
  writeFileSync(path, manifestJsonSchemaText());
  return path;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.stdout.write(`wrote ${writeManifestJsonSchema()}\n`);
}
