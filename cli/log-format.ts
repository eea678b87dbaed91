/**
 * `--log-format pretty|json` on every command: the choice goes into CLAWRAY_LOG_FORMAT before
 * the command runs, so this process's loggers and every process it starts (workers, actors,
 * job drivers) log the same way.
 */
import { type Command, Option } from 'commander';
import { LOG_FORMATS } from '../common/logger.js';

export function addLogFormatOption(program: Command): void {
  program
    .addOption(
      new Option(
        '--log-format <format>',
        'logs on stderr: pretty lines or JSON lines (default: pretty in a terminal, JSON otherwise)',
      ).choices(LOG_FORMATS),
    )
    .hook('preAction', (root) => {
      const format = root.opts().logFormat as string | undefined;
      if (format) process.env.CLAWRAY_LOG_FORMAT = format;
    });
}
