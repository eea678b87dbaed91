/** `clawray/rollout`: rollout engines, standalone and as the `RolloutEngine` actor. */

export {
  type CaptureContext,
  JsonlTurnSink,
  MemoryTurnSink,
  type TurnRecord,
  TurnRecorder,
  type TurnRecorderOptions,
  type TurnSink,
} from './capture-recorder.js';
export type { ChatMessage, ChatModel, ToolCall, ToolSchema } from './chat-model.js';
export { type ExecutionProvider, OnnxDecoder } from './onnx-decoder.js';
export { createOpenAiServer, type OpenAiServerOptions } from './openai-server.js';
export {
  ContextLengthError,
  EngineBusyError,
  type FinishReason,
  type GenerateRequest,
  type GenerateResult,
  GenerationAbortedError,
  GenerationEngine,
} from './rollout-engine.js';
export {
  type ChatRequest,
  type ChatResult,
  RolloutEngine,
  type RolloutEngineOptions,
} from './rollout-engine-actor.js';
export { RolloutModel, type RolloutModelOptions } from './rollout-model.js';
export { type SamplingParams, sample } from './sampler.js';
