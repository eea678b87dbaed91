/** The toolcall track as a `Track`: built-in suite, task-file loader, environment factory. */
import { z } from 'zod';
import { ConfigError } from '../../../common/errors.js';
import { describeIssues } from '../jsonl-records.js';
import type { Track, TrackEnvOptions } from '../track.js';
import { ToolcallEnvironment } from './env.js';
import { loadToolcallTasks } from './task-file.js';
import { buildTaskSuite, type ToolcallTask } from './tasks.js';
import { TOOL_SCHEMAS } from './tools.js';

const settingsSchema = z.strictObject({
  maxTurns: z.number().int().positive().optional(),
  maxToolCalls: z.number().int().nonnegative().optional(),
  systemPrompt: z.string().min(1).optional(),
  /** Offer only these tools (fewer tools, shorter prompts for small models). Default: all. */
  tools: z
    .array(z.enum(TOOL_SCHEMAS.map((t) => t.function.name) as [string, ...string[]]))
    .min(1)
    .optional(),
});

export const toolcallTrack: Track<ToolcallTask> = {
  name: 'toolcall',
  description: 'tool use (calculator, sandboxed Python/JS, document lookup) with boxed-answer rewards',
  async builtinTasks() {
    return buildTaskSuite();
  },
  loadTasks: loadToolcallTasks,
  createEnvironment(tasks: ToolcallTask[], options: TrackEnvOptions = {}) {
    const settings = settingsSchema.safeParse(options.settings ?? {});
    if (!settings.success) {
      throw new ConfigError(`toolcall env settings: ${describeIssues(settings.error)}`);
    }
    const { tools, ...rest } = settings.data;
    return new ToolcallEnvironment({
      tasks,
      split: options.split,
      seed: options.seed,
      ...rest,
      tools: tools && TOOL_SCHEMAS.filter((t) => tools.includes(t.function.name)),
    });
  },
};
