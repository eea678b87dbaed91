/**
 * Judge prompts in the style of OpenClaw-RL: the judge sees the conversation so far, the assistant's
 * output and the NEXT STATE (the following user message or tool result), and uses the next state as
 * evidence of whether the output served the user. Both prompts end in a boxed verdict.
 */

export interface JudgeChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** A message of the judged conversation; content may be OpenAI-style parts (text parts are kept). */
export interface ConversationMessage {
  role: string;
  content?: unknown;
  tool_calls?: unknown;
  name?: string;
}

export interface NextState {
  /** Usually `user` or `tool`. */
  role: string;
  content: unknown;
}

/** Ground truth for rule verifiers; model judges ignore it. */
export interface JudgeReference {
  /** The expected final answer (`boxed-answer`: compared with the response's last `\boxed{}`). */
  answer?: string;
  /** Unit tests the episode's final state passed, of `testsTotal` (`tests-passed`). */
  testsPassed?: number;
  testsTotal?: number;
  /** The environment's own outcome reward (`env-reward`), e.g. an OSWorld or SWE-bench verdict. */
  reward?: number;
}

export interface JudgeInput {
  /** The prompt messages the policy answered. */
  messages: ReadonlyArray<ConversationMessage>;
  /** The policy's output for this turn (text, possibly with serialized tool calls). */
  response: string;
  /**
   * The next state: the message that followed the response. Null for the last turn of an
   * episode, which only rule verifiers can score (model judges need the evidence).
   */
  nextState: NextState | null;
  reference?: JudgeReference;
}

/** Flattens OpenAI-style content (string, or array of parts) to text; non-text parts become `[type]` markers. */
export function contentToText(content: unknown): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        if (typeof part === 'string') return part;
        if (part && typeof part === 'object') {
          const p = part as { type?: unknown; text?: unknown };
          if (typeof p.text === 'string') return p.text;
          return `[${typeof p.type === 'string' ? p.type : 'non-text'} content]`;
        }
        return '';
      })
      .join('');
  }
  return JSON.stringify(content);
}

/** Renders the conversation as `[role] content` blocks. */
export function formatConversation(messages: ReadonlyArray<ConversationMessage>): string {
  if (messages.length === 0) return '(empty)';
  return messages
    .map((m) => {
      const role = m.role === 'developer' ? 'system' : m.role;
      let text = contentToText(m.content);
      if (m.tool_calls !== undefined && m.tool_calls !== null) {
        text += `${text ? '\n' : ''}[tool calls] ${JSON.stringify(m.tool_calls)}`;
      }
      return `[${role}${m.name ? ` (${m.name})` : ''}]\n${text}`;
    })
    .join('\n\n');
}

export const PRM_SYSTEM_PROMPT = [
  'You are a process reward model that evaluates one turn of an AI assistant.',
  "Decide whether the assistant's output successfully fulfilled the user's intent at that point of the conversation.",
  'Your main evidence is the NEXT STATE: the message that came right after the output (a user reply or a tool result).',
  '- If the user moves on, confirms, thanks the assistant, or a tool result shows the action worked, the output was good.',
  '- If the user asks to redo or retry, corrects the assistant, points out a mistake, rephrases the same request, ' +
    'or repeats it because it was not done, the output was bad. Such signals count AGAINST the output even when polite.',
  '- If a tool result shows an error or a failed action caused by the output, the output was bad.',
  '- If the next state gives no usable evidence either way, the verdict is neutral.',
  'First reason briefly, then classify the next state as (a) positive evidence, (b) negative evidence, or (c) neutral/unclear.',
  'Finish with exactly one final answer: \\boxed{1} for (a), \\boxed{-1} for (b), or \\boxed{0} for (c).',
  'Only the last \\boxed{} in your answer counts.',
].join('\n');

/** The turn under judgement: the conversation, the assistant output and its next state. */
function turnSections(input: JudgeInput): string[] {
  return [
    '## Conversation so far',
    formatConversation(input.messages),
    '',
    '## Assistant output',
    input.response,
    '',
    `## Next state [role: ${input.nextState?.role ?? 'none'}]`,
    input.nextState ? contentToText(input.nextState.content) : '(none)',
    '',
  ];
}

/** Process-reward judge messages for one turn. */
export function buildPrmMessages(input: JudgeInput): JudgeChatMessage[] {
  const user = [
    ...turnSections(input),
    'Using the next state as evidence, did the assistant output fulfil the user intent?',
    'Classify as (a) positive, (b) negative (correction, redo request, rephrasing, failure), or (c) neutral,',
    'then end with \\boxed{1}, \\boxed{-1} or \\boxed{0}.',
  ].join('\n');
  return [
    { role: 'system', content: PRM_SYSTEM_PROMPT },
    { role: 'user', content: user },
  ];
}

export const HINT_SYSTEM_PROMPT = [
  'You help train an AI assistant by hindsight. You see a conversation, the assistant output for one turn,',
  'and the NEXT STATE that followed it (a user reply or a tool result).',
  'Decide whether the next state reveals useful information that the assistant should have used',
  'to produce a better output: a correction, a preference, a missing requirement, an error it caused, or a fact it needed.',
  'If it does, answer \\boxed{1} and give a concise hint of 1 to 3 sentences, written as an instruction to the assistant,',
  'between [HINT_START] and [HINT_END]. The hint must be useful without seeing the next state and must not',
  'quote or mention the next state itself.',
  'If the next state carries no such information, answer \\boxed{-1} and give no hint.',
  'Only the last \\boxed{} in your answer counts.',
].join('\n');

/** OPD hint-judge messages for one turn. */
export function buildHintMessages(input: JudgeInput): JudgeChatMessage[] {
  const user = [
    ...turnSections(input),
    'Does the next state contain information that would have led to a better assistant output?',
    'If yes: write [HINT_START]your 1-3 sentence hint[HINT_END] and end with \\boxed{1}.',
    'If no: end with \\boxed{-1}.',
  ].join('\n');
  return [
    { role: 'system', content: HINT_SYSTEM_PROMPT },
    { role: 'user', content: user },
  ];
}

/** The hint as appended to the last user message when building the teacher prompt. */
export function formatHintForUser(hint: string): string {
  return `\n\n[user's hint / instruction]\n${hint.trim()}`;
}

/**
 * The single text a sequence-classification PRM reads for one turn. Plain markers rather than a
 * chat template: such classifiers are fine-tuned on flat text, and the next state comes last so
 * that left truncation of long conversations keeps the evidence.
 */
export function buildClassifierText(input: JudgeInput): string {
  return [
    formatConversation(input.messages),
    `[assistant output]\n${input.response}`,
    `[next state (${input.nextState?.role ?? 'none'})]\n${input.nextState ? contentToText(input.nextState.content) : ''}`,
  ].join('\n\n');
}
