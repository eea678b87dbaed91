import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  manifestJsonSchema,
  manifestJsonSchemaText,
  schemaFilePath,
  writeManifestJsonSchema,
} from './json-schema.js';

const REGENERATE = 'CLAWRAY_UPDATE_SCHEMA=1 npx vitest run jobs/manifest/json-schema.test.ts';

describe('jobs/schema/rljob.json', () => {
  it('is up to date with the zod schema', () => {
    const path = schemaFilePath();
    if (process.env.CLAWRAY_UPDATE_SCHEMA) writeManifestJsonSchema(path);
    const committed = existsSync(path) ? readFileSync(path, 'utf8') : '';
    expect(
      committed === manifestJsonSchemaText(),
      `${path} is stale; regenerate it with: ${REGENERATE}`,
    ).toBe(true);
  });

  it('rejects unknown fields and names the defaults', () => {
    const schema = manifestJsonSchema() as {
      additionalProperties: boolean;
      required: string[];
      properties: {
        spec: { properties: Record<string, { description?: string; additionalProperties?: boolean }> };
      };
    };
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(['apiVersion', 'kind', 'metadata', 'spec']);
    expect(schema.properties.spec.properties.rollout.additionalProperties).toBe(false);
    expect(JSON.stringify(schema)).toContain('Default per track: personal 64, toolcall 16');
  });
});
