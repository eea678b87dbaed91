/**
 * The personal-agent track: a simulated user with a stable preference who chats with the agent
 * (in process or through the OpenAI-compatible endpoint with OpenClaw-RL's session headers) and
 * reacts in the next message, a stand-in judge that reads those reactions, and the preference
 * score the track is measured by.
 */
export {
  DEFAULT_EVAL_SESSIONS,
  evaluatePreference,
  type PreferenceReport,
  type PreferenceScoreOptions,
  preferenceScore,
} from './evaluate.js';
export {
  allPreferences,
  DEFAULT_MAX_CHARS,
  DEFAULT_MAX_WORDS,
  DEFAULT_PREFIX,
  DEFAULT_SIGNOFF,
  hasContent,
  makePreference,
  PREFERENCE_KINDS,
  type Preference,
  type PreferenceCheck,
  type PreferenceKind,
  type PreferenceSpec,
  satisfyingReply,
} from './preferences.js';
export { type ReactionEvidence, ReactionJudge, type ReactionVerdict } from './reaction-judge.js';
export { requestPool, requestsOf, type UserRequest } from './requests.js';
export {
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_SESSION_PREFIX,
  DEFAULT_TURNS_PER_SESSION,
  EMPTY_REPLY_REMARK,
  PRAISE_PHRASES,
  type Reaction,
  SimulatedUser,
  type SimulatedUserOptions,
  type TurnOutcome,
  UserSession,
} from './simulated-user.js';
export {
  type AgentFn,
  ChatEndpointError,
  type OpenAiEndpoint,
  openAiAgent,
  type RunSessionOptions,
  requestSeed,
  runHttpSession,
  runSession,
  type SessionResult,
  sessionHeaders,
  type TurnContext,
} from './user-session.js';
