/**
 * Modules the cluster itself names in actor specs — the head's job supervisor — by a registered
 * name (`clawray:job-supervisor`) that every actor host resolves in its own clawray install.
 * Not a file URL the head computed in its install (another node's install may live elsewhere),
 * and not the package name `clawray/jobs`, which a host resolves from the job's working
 * directory first, where a project's own clawray of another version may be installed.
 */
import { pathToFileURL } from 'node:url';
import { distEntry } from './package-root.js';

const SCHEME = 'clawray:';

/** Registered name → its compiled entry in this install (distEntry's name). */
const SYSTEM_MODULES: Readonly<Record<string, string>> = {
  'clawray:job-supervisor': 'jobs/supervisor/job-supervisor',
};

/** The job supervisor's registered module (its class: `JobSupervisor`). */
export const JOB_SUPERVISOR_MODULE = 'clawray:job-supervisor';

/** Whether a module specifier is in the registered `clawray:` form (known or not). */
export function isSystemModule(specifier: string): boolean {
  return specifier.startsWith(SCHEME);
}

/** Why a `clawray:` specifier cannot be loaded, or undefined when it is registered. */
export function systemModuleProblem(specifier: string): string | undefined {
  return Object.hasOwn(SYSTEM_MODULES, specifier)
    ? undefined
    : `no clawray module is registered as ${JSON.stringify(specifier)} (registered: ${Object.keys(SYSTEM_MODULES).join(', ')})`;
}

/** The file URL of a registered module in this process's install. */
export function systemModuleUrl(specifier: string): string {
  const why = systemModuleProblem(specifier);
  if (why) throw new Error(why);
  return pathToFileURL(distEntry(SYSTEM_MODULES[specifier])).href;
}
