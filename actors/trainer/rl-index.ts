/**
 * `clawray/rl`: public building blocks for RL losses — advantage estimators on plain numbers
 * and differentiable loss terms on TensorFlow.js tensors.
 */
export {
  broadcastPerSample,
  type CombineInput,
  combineAdvantages,
  type GrpoOptions,
  type GrpoResult,
  grpoAdvantages,
  opdAdvantages,
  padRows,
} from './advantages.js';
export {
  aggregate,
  entropyFromLogits,
  type KlEstimator,
  type KlInput,
  klK3,
  klPerToken,
  type LossAggregation,
  maskedMean,
  type PpoClipInput,
  type PpoClipOutput,
  ppoClipLoss,
  type RlLossInput,
  type RlLossOutput,
  rlLoss,
  type SftInput,
  sequenceMean,
  sftLoss,
  type TopKDistillationInput,
  type TruncatedImportanceInput,
  tokenEntropy,
  topKDistillationLoss,
  topKKlPerToken,
  truncatedImportanceWeights,
} from './losses.js';
export {
  type CustomLoss,
  type GradientReducer,
  PolicyTrainer,
  type PolicyTrainerOptions,
  type StepMetrics,
  type StepOptions,
  type TeacherTopK,
  type TisOptions,
  type TrainSample,
} from './policy-trainer.js';
