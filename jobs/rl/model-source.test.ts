import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { COMPACT_TOOLS_CHAT_TEMPLATE } from '../../actors/models/builtin-chat-templates.js';
import { CHAT_TEMPLATE_FILE, ChatTemplate } from '../../actors/models/chat-template.js';
import { ConfigError } from '../../common/errors.js';
import { prepareModelDir } from './model-source.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-model-source-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const spec = (chatTemplate?: string) => ({
  path: './model',
  init: { preset: 'tiny' as const, seed: 0 },
  ...(chatTemplate ? { chatTemplate } : {}),
});

describe('prepareModelDir', () => {
  it('swaps in a built-in template by name, leaving the model dir as it was', () => {
    const plain = prepareModelDir(spec(), root, root);
    const dir = prepareModelDir(spec('builtin:compact-tools'), root, root);
    expect(dir).not.toBe(plain);
    expect(readFileSync(join(dir, CHAT_TEMPLATE_FILE), 'utf8')).toBe(COMPACT_TOOLS_CHAT_TEMPLATE);
    expect(readFileSync(join(dir, 'config.json'), 'utf8')).toBe(
      readFileSync(join(plain, 'config.json'), 'utf8'),
    );
    // The tools take one line of the system turn.
    const text = new ChatTemplate(COMPACT_TOOLS_CHAT_TEMPLATE).render({
      messages: [
        { role: 'system', content: 'Use the shell.' },
        { role: 'user', content: 'Save 1234 to f567.txt.' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'shell_exec',
            description: 'Run a command.',
            parameters: { type: 'object', properties: { command: { type: 'string' } } },
          },
        },
      ],
      addGenerationPrompt: true,
    });
    expect(text).toBe(
      '<|im_start|>system\nUse the shell.\nTools: shell_exec(command)<|im_end|>\n' +
        '<|im_start|>user\nSave 1234 to f567.txt.<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('refuses an unknown built-in and a missing file, naming the field', () => {
    expect(() => prepareModelDir(spec('builtin:nope'), root, root)).toThrow(
      /spec\.model\.chatTemplate: no built-in template 'builtin:nope' \(built in: builtin:compact-tools\)/,
    );
    expect(() => prepareModelDir(spec('./missing.jinja'), root, root)).toThrow(ConfigError);
  });
});
