/**
 * The one environment interface every track (toolcall, terminal, swe, gui…) implements.
 *
 * An episode: `reset(taskId?)` → the first Observation; then `step(action)` with each assistant
 * turn until `done`; `close()` frees what the environment holds (sandboxes, workspaces).
 * Messages and tool schemas are OpenAI chat-completions shaped, so an Observation's `messages`
 * and `tools` can be sent to an OpenAI-compatible endpoint as they are, and the assistant message
 * that comes back is an Action.
 */

/** One OpenAI-style function tool call of an assistant message. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: {
    name: string;
    /** JSON-encoded arguments object, as the model wrote it (may be malformed). */
    arguments: string;
  };
}

export interface SystemMessage {
  role: 'system';
  content: string;
}

export interface UserMessage {
  role: 'user';
  content: string;
}

export interface AssistantMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: ToolCall[];
}

export interface ToolMessage {
  role: 'tool';
  tool_call_id: string;
  name?: string;
  content: string;
}

export type ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** A tool declared in OpenAI function-schema JSON. */
export interface ToolSchema {
  type: 'function';
  function: {
    name: string;
    description: string;
    /** A JSON Schema object describing the arguments. */
    parameters: Record<string, unknown>;
  };
}

export interface Observation {
  /** The whole conversation so far (system prompt, task, every turn and tool result). */
  messages: ChatMessage[];
  /** Plain text of what is new since the last observation (the task at reset, tool results after). */
  text: string;
  /** The tools the agent may call (empty when the track has none). */
  tools: ToolSchema[];
  /** A PNG screenshot of the screen after this step (tracks with a screen: gui). */
  screenshotPng?: Uint8Array;
}

/** An agent's turn: an assistant message with content and/or tool calls. */
export interface Action {
  content?: string | null;
  tool_calls?: ToolCall[];
}

export interface StepResult<Info = Record<string, unknown>> {
  observation: Observation;
  /** The reward of this step (tracks with outcome rewards give 0 until `done`). */
  reward: number;
  done: boolean;
  info: Info;
}

export interface Environment<Info = Record<string, unknown>> {
  /** Start an episode: on `taskId` when given, else on the environment's next task. */
  reset(taskId?: string): Promise<Observation>;
  /** Apply one agent turn. Calling it after `done` (or before `reset`) throws. */
  step(action: Action): Promise<StepResult<Info>>;
  /**
   * Score the episode's current state without ending it (run the tests, read the page), as the
   * final step would. Tracks whose outcome is the agent's final answer score what was answered so far.
   */
  evaluate(): Promise<Evaluation<Info>>;
  /** Release everything the environment holds; it is not used afterwards. */
  close(): Promise<void>;
}

export interface Evaluation<Info = Record<string, unknown>> {
  reward: number;
  info: Info;
}

/** The assistant message an Action adds to the conversation. */
export function actionToMessage(action: Action): AssistantMessage {
  const message: AssistantMessage = { role: 'assistant', content: action.content ?? null };
  if (action.tool_calls && action.tool_calls.length > 0) message.tool_calls = action.tool_calls;
  return message;
}
