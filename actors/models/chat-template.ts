/**
 * Chat templates (the Jinja `chat_template` of `tokenizer_config.json` or `chat_template.jinja`)
 * rendered with `@huggingface/jinja`, in OpenAI's message format with tools and tool calls, and
 * the parser that turns a Qwen/Hermes-style completion back into OpenAI `tool_calls`.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { ConfigError } from '../../common/errors.js';
import { TOKENIZER_CONFIG_FILE } from './tokenizer.js';

export const CHAT_TEMPLATE_FILE = 'chat_template.jinja';

export interface ToolCall {
  id: string;
  type: 'function';
  function: {
    name: string;
    /** A JSON-encoded object, as OpenAI sends it. */
    arguments: string;
  };
}

export interface ToolSchema {
  type: 'function';
  function: {
    name: string;
    description?: string;
    parameters?: Record<string, unknown>;
    [key: string]: unknown;
  };
}

export type ContentPart = { type: 'text'; text: string } | { type: string; [key: string]: unknown };

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | (string & {});
  content?: string | ContentPart[] | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
  [key: string]: unknown;
}

export interface RenderOptions {
  messages: readonly ChatMessage[];
  tools?: readonly ToolSchema[];
  /** End with the assistant header so the model writes the next assistant turn. */
  addGenerationPrompt?: boolean;
  /** More template variables (e.g. Qwen3's `enable_thinking`). */
  extra?: Record<string, unknown>;
}

/**
 * A Qwen2.5/Qwen3-style ChatML template: the system turn carries the tool signatures in a
 * `<tools>` block, assistant tool calls are `<tool_call>{"name", "arguments"}</tool_call>`
 * JSON blocks, and consecutive tool results share one user turn in `<tool_response>` blocks.
 * Like Qwen3 (unlike Qwen2.5) it adds no default system prompt, and it accepts arguments
 * either as an object or as an already-encoded JSON string.
 */
export const QWEN_CHAT_TEMPLATE = `{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\\n\\n' }}
    {%- endif %}
    {{- "# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
    {%- elif message.role == 'assistant' %}
        {{- '<|im_start|>assistant\\n' + message.content }}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and message.content) or (not loop.first) %}
                    {{- '\\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == 'tool' %}
        {%- if loop.first or (messages[loop.index0 - 1].role != 'tool') %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != 'tool') %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
`;

/** Text of a message's content: parts are joined, a missing content is empty. */
function contentText(content: ChatMessage['content']): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  return content.map((p) => (p.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('');
}

/**
 * Templates written for transformers expect `arguments` as an object (they `tojson` it), so
 * OpenAI's JSON strings are decoded first, as vLLM does; a string that is not a JSON object
 * stays a string.
 */
function templateArguments(args: unknown): unknown {
  if (typeof args !== 'string') return args;
  try {
    const parsed = JSON.parse(args);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : args;
  } catch {
    return args;
  }
}

function templateMessage(m: ChatMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { ...m, content: contentText(m.content) };
  if (m.tool_calls) {
    out.tool_calls = m.tool_calls.map((c) => ({
      ...c,
      function: { ...c.function, arguments: templateArguments(c.function?.arguments) },
    }));
  }
  return out;
}

export class ChatTemplate {
  readonly source: string;
  /** The file it came from (for errors). */
  readonly file: string;
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  private readonly template: Template;

  constructor(
    source: string,
    options: { file?: string; bosToken?: string | null; eosToken?: string | null } = {},
  ) {
    this.source = source;
    this.file = options.file ?? 'chat template';
    this.bosToken = options.bosToken ?? null;
    this.eosToken = options.eosToken ?? null;
    try {
      this.template = new Template(source);
    } catch (err) {
      throw new ConfigError(`${this.file}: the chat template does not parse (${(err as Error).message})`, {
        cause: err,
        fields: { file: this.file },
      });
    }
  }

  render(options: RenderOptions): string {
    if (options.messages.length === 0) throw new ConfigError('a chat needs at least one message');
    const vars: Record<string, unknown> = {
      ...options.extra,
      messages: options.messages.map(templateMessage),
      add_generation_prompt: options.addGenerationPrompt ?? false,
      bos_token: this.bosToken ?? '',
      eos_token: this.eosToken ?? '',
    };
    // transformers passes tools=None when there are none; templates test `if tools`.
    if (options.tools && options.tools.length > 0) vars.tools = options.tools;
    try {
      return this.template.render(vars);
    } catch (err) {
      throw new ConfigError(`${this.file}: rendering the chat template failed: ${(err as Error).message}`, {
        cause: err,
        fields: { file: this.file },
      });
    }
  }
}

/** The template text of a `tokenizer_config.json` `chat_template` (a string or named list). */
export function chatTemplateSource(value: unknown, file: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    const named = value as { name?: unknown; template?: unknown }[];
    const pick = named.find((t) => t?.name === 'default') ?? named[0];
    if (pick && typeof pick.template === 'string') return pick.template;
  }
  throw new ConfigError(`${file}: chat_template must be a string or a list of {name, template}`, {
    fields: { file },
  });
}

/**
 * A model directory's chat template: `chat_template.jinja` (newer transformers) or the
 * `chat_template` of `tokenizer_config.json`; null when it has none (a base model).
 */
export function loadChatTemplate(dir: string): ChatTemplate | null {
  const jinjaFile = join(dir, CHAT_TEMPLATE_FILE);
  const configFile = join(dir, TOKENIZER_CONFIG_FILE);
  let config: Record<string, unknown> = {};
  if (existsSync(configFile)) {
    try {
      config = JSON.parse(readFileSync(configFile, 'utf8'));
    } catch (err) {
      throw new ConfigError(`${configFile}: not valid JSON (${(err as Error).message})`, {
        cause: err,
        fields: { file: configFile },
      });
    }
  }
  const special = (v: unknown): string | null =>
    typeof v === 'string'
      ? v
      : typeof (v as { content?: unknown })?.content === 'string'
        ? (v as { content: string }).content
        : null;
  const tokens = { bosToken: special(config.bos_token), eosToken: special(config.eos_token) };
  if (existsSync(jinjaFile)) {
    return new ChatTemplate(readFileSync(jinjaFile, 'utf8'), { ...tokens, file: jinjaFile });
  }
  const source = chatTemplateSource(config.chat_template, configFile);
  return source === null ? null : new ChatTemplate(source, { ...tokens, file: configFile });
}

// ---------------------------------------------------------------------------------------------
// Tool calls in generated text

export interface ParsedToolCalls {
  /** The text outside the parsed `<tool_call>` blocks (trimmed when there were any). */
  content: string;
  toolCalls: ToolCall[];
}

export interface ParseToolCallsOptions {
  /** Id of the i-th call; default `call_` + 24 random hex digits, like OpenAI's. */
  makeId?: (index: number) => string;
}

const TOOL_CALL_RE = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

/**
 * Extracts `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks. A block that is
 * not a JSON object with a string `name` stays in `content` untouched, so a malformed call is
 * shown to whoever reads the reply instead of vanishing (and an unterminated block, from a
 * generation cut at max tokens, is left as text too).
 */
export function parseToolCalls(text: string, options: ParseToolCallsOptions = {}): ParsedToolCalls {
  const makeId = options.makeId ?? (() => `call_${randomBytes(12).toString('hex')}`);
  const toolCalls: ToolCall[] = [];
  const content = text.replace(TOOL_CALL_RE, (block, body: string) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return block;
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return block;
    const {
      name,
      arguments: args,
      parameters,
    } = parsed as { name?: unknown; arguments?: unknown; parameters?: unknown };
    if (typeof name !== 'string' || name === '') return block;
    // Some fine-tunes say "parameters"; both mean the same thing.
    const raw = args ?? parameters ?? {};
    toolCalls.push({
      id: makeId(toolCalls.length),
      type: 'function',
      function: { name, arguments: typeof raw === 'string' ? raw : JSON.stringify(raw) },
    });
    return '';
  });
  // Trimmed only when calls were cut out: the newlines around them are the template's, not the reply's.
  return { content: toolCalls.length > 0 ? content.trim() : text, toolCalls };
}
