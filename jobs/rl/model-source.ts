/**
 * Where a job's policy model comes from: `spec.model.path` as it is, or, when the manifest
 * names an `init` preset and the path holds no model, a random model of that preset (what the
 * examples and tests train). `chatTemplate` swaps in another template, like vLLM's
 * `--chat-template` (a file, or one clawray ships: `builtin:compact-tools`): the model dir is
 * mirrored with links and the template file replaced, so the user's directory is never written.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import {
  BUILTIN_CHAT_TEMPLATES,
  BUILTIN_TEMPLATE_PREFIX,
} from '../../actors/models/builtin-chat-templates.js';
import { CHAT_TEMPLATE_FILE } from '../../actors/models/chat-template.js';
import { CONFIG_FILE } from '../../actors/models/model-dir.js';
import { initRandomModel } from '../../actors/models/model-init.js';
import { ConfigError } from '../../common/errors.js';
import type { RLJobSpec } from '../manifest/schema.js';

/** The template `spec.model.chatTemplate` names: a shipped one (`builtin:NAME`) or a file. */
function chatTemplateText(value: string, workingDir: string): string {
  if (value.startsWith(BUILTIN_TEMPLATE_PREFIX)) {
    const name = value.slice(BUILTIN_TEMPLATE_PREFIX.length);
    const text = BUILTIN_CHAT_TEMPLATES[name];
    if (text === undefined) {
      const known = Object.keys(BUILTIN_CHAT_TEMPLATES).map((n) => BUILTIN_TEMPLATE_PREFIX + n);
      throw new ConfigError(
        `spec.model.chatTemplate: no built-in template '${value}' (built in: ${known.join(', ')})`,
        { fields: { field: 'spec.model.chatTemplate', value } },
      );
    }
    return text;
  }
  const template = resolve(workingDir, value);
  if (!existsSync(template)) {
    throw new ConfigError(`spec.model.chatTemplate: ${template} does not exist`, {
      fields: { field: 'spec.model.chatTemplate', path: template },
    });
  }
  return readFileSync(template, 'utf8');
}

export function prepareModelDir(
  spec: Pick<RLJobSpec['model'], 'path' | 'init' | 'chatTemplate'>,
  workingDir: string,
  dataDir: string,
): string {
  let dir = resolve(workingDir, spec.path);
  if (!existsSync(join(dir, CONFIG_FILE))) {
    if (!spec.init) {
      throw new ConfigError(
        `spec.model.path: ${dir} holds no model (no ${CONFIG_FILE}); point it at a model directory or add spec.model.init to start from a random preset`,
        { fields: { field: 'spec.model.path', path: dir } },
      );
    }
    const { preset, seed, maxContext } = spec.init;
    dir = join(dataDir, 'models', `${preset}-seed${seed}${maxContext ? `-ctx${maxContext}` : ''}`);
    if (!existsSync(join(dir, CONFIG_FILE))) {
      const tmp = `${dir}.tmp-${process.pid}`;
      rmSync(tmp, { recursive: true, force: true });
      initRandomModel({ preset, outDir: tmp, seed, maxContext });
      mkdirSync(join(dir, '..'), { recursive: true });
      rmSync(dir, { recursive: true, force: true });
      // A rename is atomic: two jobs initialising the same preset never see half a model.
      renameSync(tmp, dir);
    }
  }
  if (!spec.chatTemplate) return dir;
  const text = chatTemplateText(spec.chatTemplate, workingDir);
  const key = createHash('sha256').update(dir).update('\0').update(text).digest('hex').slice(0, 16);
  const mirror = join(dataDir, 'models', `templated-${key}`);
  if (existsSync(join(mirror, CHAT_TEMPLATE_FILE))) return mirror;
  const tmp = `${mirror}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  for (const name of readdirSync(dir)) {
    // chat_template.jinja wins over tokenizer_config.json's template, so replacing it is enough.
    if (name !== CHAT_TEMPLATE_FILE) symlinkSync(join(dir, name), join(tmp, name));
  }
  writeFileSync(join(tmp, CHAT_TEMPLATE_FILE), text);
  rmSync(mirror, { recursive: true, force: true });
  renameSync(tmp, mirror);
  return mirror;
}
