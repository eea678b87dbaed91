#!/usr/bin/env node
/** The one `clawray` executable. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { packageRoot } from '../common/package-root.js';
import { registerActorsCommands } from './actors-commands.js';
import { EXIT_USAGE, exitOnError } from './cli-errors.js';
import { registerEnvCommands } from './env-command.js';
import { registerEvalCommand } from './eval-command.js';
import { registerHealthCommand } from './health-command.js';
import { registerJobCommands } from './job-commands.js';
import { addLogFormatOption } from './log-format.js';
import { registerModelCommands } from './model-commands.js';
import { registerRljobCommands } from './rljob-run.js';
import { registerSandboxCommand } from './sandbox-command.js';
import { registerServeCommand } from './serve-command.js';
import { registerServerCommands } from './server-commands.js';
import { registerStatusCommands } from './status-commands.js';
import { registerStopCommand } from './stop-command.js';

const { version } = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as {
  version: string;
};

const program = new Command()
  .name('clawray')
  .description('A Ray-style actor cluster for asynchronous RL of LLM agents')
  .version(version)
  .showHelpAfterError()
  .exitOverride();

addLogFormatOption(program);
registerServerCommands(program);
registerStopCommand(program);
registerStatusCommands(program);
registerActorsCommands(program);
registerModelCommands(program);
registerServeCommand(program);
registerSandboxCommand(program);
registerEnvCommands(program);
registerJobCommands(program);
registerRljobCommands(program);
registerEvalCommand(program);
registerHealthCommand(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE);
  exitOnError(err);
});
