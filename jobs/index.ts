/**
 * Job submission: `import { JobSupervisor, JobsClient } from 'clawray/jobs'`. The head creates
 * one JobSupervisor actor per submitted job; JobsClient is what `clawray job …` uses.
 */
export { JobSupervisor, jobLogPath, type LogChunk, STOP_GRACE_MS } from './supervisor/job-supervisor.js';
export { JobsClient, type JobView, jobView, TERMINAL_STATUSES } from './supervisor/jobs-client.js';
