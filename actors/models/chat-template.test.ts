import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import {
  type ChatMessage,
  ChatTemplate,
  chatTemplateSource,
  loadChatTemplate,
  parseToolCalls,
  QWEN_CHAT_TEMPLATE,
  type ToolSchema,
} from './chat-template.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-chat-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const tools: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];

const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are helpful.' },
  { role: 'user', content: 'Weather in Paris and Lyon?' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
      { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lyon"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call_1', content: '20°C' },
  { role: 'tool', tool_call_id: 'call_2', content: '18°C' },
  { role: 'assistant', content: 'Paris 20°C, Lyon 18°C.' },
];

const template = new ChatTemplate(QWEN_CHAT_TEMPLATE, { eosToken: '<|im_end|>' });

describe('QWEN_CHAT_TEMPLATE', () => {
  it('renders system + tools, tool calls, grouped tool responses and the generation prompt', () => {
    const text = template.render({
      messages: [...conversation, { role: 'user', content: 'Thanks!' }],
      tools,
      addGenerationPrompt: true,
    });
    expect(text).toBe(
      [
        '<|im_start|>system',
        'You are helpful.',
        '',
        '# Tools',
        '',
        'You may call one or more functions to assist with the user query.',
        '',
        'You are provided with function signatures within <tools></tools> XML tags:',
        '<tools>',
        '{"type": "function", "function": {"name": "get_weather", "description": "Current weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}',
        '</tools>',
        '',
        'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:',
        '<tool_call>',
        '{"name": <function-name>, "arguments": <args-json-object>}',
        '</tool_call><|im_end|>',
        '<|im_start|>user',
        'Weather in Paris and Lyon?<|im_end|>',
        '<|im_start|>assistant',
        '<tool_call>',
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        '</tool_call>',
        '<tool_call>',
        '{"name": "get_weather", "arguments": {"city": "Lyon"}}',
        '</tool_call><|im_end|>',
        '<|im_start|>user',
        '<tool_response>',
        '20°C',
        '</tool_response>',
        '<tool_response>',
        '18°C',
        '</tool_response><|im_end|>',
        '<|im_start|>assistant',
        'Paris 20°C, Lyon 18°C.<|im_end|>',
        '<|im_start|>user',
        'Thanks!<|im_end|>',
        '<|im_start|>assistant',
        '',
      ].join('\n'),
    );
  });

  it('puts assistant text before its tool calls, and accepts arguments as objects', () => {
    const text = template.render({
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            {
              id: 'c',
              type: 'function',
              function: { name: 'f', arguments: { a: [1, 'x'] } as unknown as string },
            },
          ],
        },
      ],
    });
    expect(text).toBe(
      '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nChecking.\n<tool_call>\n{"name": "f", "arguments": {"a": [1, "x"]}}\n</tool_call><|im_end|>\n',
    );
  });

  it('without tools and without a system message adds no system turn; without the prompt ends after the last turn', () => {
    expect(template.render({ messages: [{ role: 'user', content: 'hi' }], addGenerationPrompt: true })).toBe(
      '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(
      template.render({
        messages: [
          { role: 'system', content: 'S' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'a' },
              { type: 'text', text: 'b' },
            ],
          },
        ],
      }),
    ).toBe('<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nab<|im_end|>\n');
  });

  it('with tools but no system message still writes the tools block', () => {
    const text = template.render({ messages: [{ role: 'user', content: 'hi' }], tools });
    expect(text.startsWith('<|im_start|>system\n# Tools\n')).toBe(true);
    expect(text.endsWith('<|im_start|>user\nhi<|im_end|>\n')).toBe(true);
  });
});

describe('ChatTemplate', () => {
  it('passes bos/eos tokens and extra variables to other templates', () => {
    const t = new ChatTemplate(
      '{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}{% endfor %}{% if enable_thinking %}<think>{% endif %}',
      { bosToken: '<s>', eosToken: '</s>' },
    );
    expect(t.render({ messages: [{ role: 'user', content: 'x' }], extra: { enable_thinking: true } })).toBe(
      '<s>[user]x</s><think>',
    );
  });

  it('reports a template that does not parse, or that raises, naming the file', () => {
    expect(() => new ChatTemplate('{% if %}', { file: 'tokenizer_config.json' })).toThrow(
      /tokenizer_config.json: the chat template does not parse/,
    );
    const raising = new ChatTemplate("{{ raise_exception('roles must alternate') }}", { file: 'x.jinja' });
    expect(() => raising.render({ messages: [{ role: 'user', content: 'a' }] })).toThrow(
      /x.jinja: .*roles must alternate/,
    );
    expect(() => template.render({ messages: [] })).toThrow(ConfigError);
  });

  it('loads chat_template.jinja before tokenizer_config.json, and null when there is none', () => {
    const dir = mkdtempSync(join(root, 'd-'));
    expect(loadChatTemplate(dir)).toBeNull();
    writeFileSync(
      join(dir, 'tokenizer_config.json'),
      JSON.stringify({ chat_template: 'A{{ eos_token }}', eos_token: 'E' }),
    );
    expect(loadChatTemplate(dir)!.render({ messages: [{ role: 'user', content: '' }] })).toBe('AE');
    writeFileSync(join(dir, 'chat_template.jinja'), 'B');
    expect(loadChatTemplate(dir)!.render({ messages: [{ role: 'user', content: '' }] })).toBe('B');
    expect(loadChatTemplate(dir)!.file).toBe(join(dir, 'chat_template.jinja'));
  });

  it('takes the default of a named template list', () => {
    expect(
      chatTemplateSource(
        [
          { name: 'tool_use', template: 'T' },
          { name: 'default', template: 'D' },
        ],
        'f',
      ),
    ).toBe('D');
    expect(() => chatTemplateSource(42, 'tokenizer_config.json')).toThrow(
      /tokenizer_config.json: chat_template/,
    );
  });
});

describe('parseToolCalls', () => {
  const ids = { makeId: (i: number) => `call_${i}` };

  it('extracts tool calls into the OpenAI format and keeps the remaining content', () => {
    const text =
      'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>';
    expect(parseToolCalls(text, ids)).toEqual({
      content: 'Let me check.',
      toolCalls: [
        { id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_1', type: 'function', function: { name: 'get_time', arguments: '{}' } },
      ],
    });
  });

  it('round-trips what the template renders for an assistant turn', () => {
    const rendered = template.render({ messages: [conversation[2]] });
    const body = rendered.slice('<|im_start|>assistant\n'.length, -'<|im_end|>\n'.length);
    const parsed = parseToolCalls(body, ids);
    expect(parsed.content).toBe('');
    expect(parsed.toolCalls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['get_weather', { city: 'Paris' }],
      ['get_weather', { city: 'Lyon' }],
    ]);
  });

  it('leaves text without calls untouched and gives random OpenAI-like ids by default', () => {
    expect(parseToolCalls('  just text\n')).toEqual({ content: '  just text\n', toolCalls: [] });
    const [call] = parseToolCalls(
      '<tool_call>{"name": "f", "arguments": "{\\"x\\": 1}"}</tool_call>',
    ).toolCalls;
    expect(call.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(call.function.arguments).toBe('{"x": 1}');
  });

  it('keeps malformed or unterminated blocks as content', () => {
    const bad = '<tool_call>\n{"name": "f", "arguments": {\n</tool_call>';
    expect(parseToolCalls(bad, ids)).toEqual({ content: bad, toolCalls: [] });
    const noName = '<tool_call>{"arguments": {}}</tool_call>';
    expect(parseToolCalls(noName, ids).toolCalls).toEqual([]);
    const cut = 'ok <tool_call>\n{"name": "f", "argu';
    expect(parseToolCalls(cut, ids)).toEqual({ content: cut, toolCalls: [] });
    const mixed = `${bad}\n<tool_call>{"name": "g", "parameters": {"y": 2}}</tool_call>`;
    expect(parseToolCalls(mixed, ids)).toEqual({
      content: bad,
      toolCalls: [{ id: 'call_0', type: 'function', function: { name: 'g', arguments: '{"y":2}' } }],
    });
  });
});
