/** `clawray/judge`: judge voters (as the `JudgeVoter` actor and in process), panels, votes, rewards. */

export {
  AGREEMENT_BUCKETS,
  JUDGE_LATENCY_BUCKETS_S,
  JudgeMetrics,
  type VoteResultLabel,
  voteResultLabel,
} from './judge-metrics.js';
export {
  JudgePanel,
  type JudgePanelOptions,
  judgeTurn,
  type LocalVoter,
  type VoterRef,
} from './judge-panel.js';
export {
  checkJudgeInput,
  JudgeVoter,
  type JudgeVoterInfo,
  type JudgeVoterLocal,
  type JudgeVoterOptions,
  judgeVoterOptionsSchema,
  type ParsedJudgeVoterOptions,
  parseJudgeVoterOptions,
  type VoteOptions,
} from './judge-voter.js';
export {
  chatCompletionsUrl,
  type JudgeMode,
  judgeMessages,
  type LlmEndpointOptions,
  LlmJudge,
  type LlmJudgeOptions,
  LlmVoter,
} from './llm-judge.js';
export {
  OnnxPrm,
  type OnnxPrmOptions,
  POSITIVE_LABEL_NAMES,
  type PrmDir,
  type PrmScore,
  positiveProbability,
  readPrmDir,
} from './onnx-prm.js';
export {
  buildClassifierText,
  buildHintMessages,
  buildPrmMessages,
  type ConversationMessage,
  contentToText,
  formatConversation,
  formatHintForUser,
  HINT_SYSTEM_PROMPT,
  type JudgeChatMessage,
  type JudgeInput,
  type JudgeReference,
  type NextState,
  PRM_SYSTEM_PROMPT,
} from './prompts.js';
export {
  applyRule,
  boxedAnswerVerifier,
  RULES,
  type RuleName,
  type RuleOutcome,
  testsPassedReward,
} from './rule-verifiers.js';
export { combineStepRewards, type StepRewardResult, type StepScore } from './step-rewards.js';
export { applyStepRule, STEP_RULES, type StepRuleName, type StepRuleScore } from './step-rules.js';
export {
  boxedContents,
  extractHint,
  type HintVote,
  type JudgeBackend,
  type JudgeResult,
  type JudgeScore,
  type JudgeVote,
  lastBoxedContent,
  type MajorityResult,
  MIN_HINT_CHARS,
  majority,
  parseBoxedScore,
  selectHint,
  tallyVotes,
} from './votes.js';
