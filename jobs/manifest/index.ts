/** RLJob manifests: schema, defaults, loading with positioned errors, and the GPU partition. */

export { crossFieldIssues, type FieldIssue } from './checks.js';
export {
  DEFAULT_MAX_STALENESS,
  DEFAULT_STEP_REWARD_COEF,
  JUDGE_BACKENDS,
  type JudgeBackendName,
  MANIFEST_TRACKS,
  type ManifestTrack,
  METHOD_DEFAULTS,
  METHODS,
  type Method,
  type MethodDefaults,
  TRACK_DEFAULTS,
  type TrackDefaults,
} from './defaults.js';
export { manifestJsonSchema, manifestJsonSchemaText, writeManifestJsonSchema } from './json-schema.js';
export {
  checkManifestText,
  loadManifest,
  type ManifestOptions,
  type ManifestProblem,
  type ManifestResult,
  manifestError,
  manifestLocation,
  parseManifest,
} from './load.js';
export {
  type BundleAssignment,
  type BundleSpec,
  type PartitionCluster,
  type PartitionPlan,
  type PlannedGroup,
  type PlanOptions,
  partitionGroups,
  planPartition,
  ROLES,
  type Role,
} from './partition.js';
export {
  API_VERSION,
  KIND,
  type RawManifest,
  type RLJobManifest,
  type RLJobManifestInput,
  type RLJobSpec,
  resolveManifest,
  rljobSchema,
} from './schema.js';
