#!/usr/bin/env node
/** The one `clawray` executable. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { packageRoot } from '../common/package-root.js';
import { EXIT_USAGE, exitOnError } from './cli-errors.js';
import { registerEnvCommands } from './env-command.js';
import { registerHealthCommand } from './health-command.js';
import { registerJobCommands } from './job-commands.js';
import { registerModelCommands } from './model-commands.js';
import { registerRljobCommands } from './rljob-run.js';
import { registerSandboxCommand } from './sandbox-command.js';
import { registerServeCommand } from './serve-command.js';
import { registerServerCommands } from './server-commands.js';
import { registerStatusCommands } from './status-commands.js';

const { version } = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as {
  version: string;
};

const program = new Command()
  .name('clawray')
  .description('A Ray-style actor cluster for asynchronous RL of LLM agents')
  .version(version)
  .showHelpAfterError()
  .exitOverride();

registerServerCommands(program);
registerStatusCommands(program);
registerModelCommands(program);
registerServeCommand(program);
registerSandboxCommand(program);
registerEnvCommands(program);
registerJobCommands(program);
registerRljobCommands(program);
registerHealthCommand(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE);
  exitOnError(err);
});
