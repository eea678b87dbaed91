/**
 * The refusals of the rollout engine, in a module of their own so that the engine and its
 * scheduler (which refuses what cannot fit the memory budget) both raise them without importing
 * each other, and so that a process recognises them without loading the ONNX runtime the actor
 * module brings. rollout-engine.ts re-exports them (the actor module too).
 */
import { ClawrayError, ConfigError, registerErrorClass } from '../../common/errors.js';

/** The queue is full: the caller should back off and retry (HTTP 429 at the OpenAI edge). */
export class EngineBusyError extends ClawrayError {
  override readonly retryable = true;
}
registerErrorClass(EngineBusyError);

/** The request's AbortSignal fired (the client went away); its generation stopped. */
export class GenerationAbortedError extends ClawrayError {}
registerErrorClass(GenerationAbortedError);

/**
 * A conversation outgrew the model's context: its prompt leaves no room for one more token.
 * An RL episode ends there (truncated), as slime ends samples that reach the length limit.
 */
export class ContextLengthError extends ConfigError {}
registerErrorClass(ContextLengthError);
