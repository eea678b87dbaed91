/**
 * Chat templates clawray ships, named in `spec.model.chatTemplate` as `builtin:NAME`.
 *
 * `compact-tools` is Qwen's ChatML with the tools in one line of the system turn (names and
 * argument names, no JSON schemas): a tool list that costs a few dozen tokens instead of
 * hundreds, for small models trained on CPUs whose whole episode must stay short. Assistant tool
 * calls are Qwen's `<tool_call>` JSON blocks and tool results share one user turn in
 * `<tool_response>` blocks, so clawray's tool-call parser reads them as it reads Qwen's.
 */
export const COMPACT_TOOLS_CHAT_TEMPLATE = `{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\\n' }}
    {%- endif %}
    {{- 'Tools:' }}
    {%- for tool in tools %}
        {%- set fn = tool.function if tool.function else tool %}
        {{- ' ' + fn.name + '(' }}
        {%- if fn.parameters and fn.parameters.properties %}
            {%- for arg in fn.parameters.properties %}
                {%- if not loop.first %}
                    {{- ', ' }}
                {%- endif %}
                {{- arg }}
            {%- endfor %}
        {%- endif %}
        {{- ')' }}
    {%- endfor %}
    {{- '<|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
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
                {{- '<tool_call>\\n{"name": "' + tool_call.name + '", "arguments": ' }}
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

export const BUILTIN_CHAT_TEMPLATES: Readonly<Record<string, string>> = {
  'compact-tools': COMPACT_TOOLS_CHAT_TEMPLATE,
};

/** The prefix that names a built-in template instead of a file. */
export const BUILTIN_TEMPLATE_PREFIX = 'builtin:';
