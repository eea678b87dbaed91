/**
 * A terminal task: an instruction for the agent, a setup script that prepares the workspace, and
 * tests that score the workspace afterwards — terminal-bench's shape, with `setup.sh` in the role
 * of its Dockerfile (the sandbox has no image to build).
 */
import type { Action, ToolCall } from '../environment.js';
import type { TrackTask } from '../track.js';

export interface TerminalTask extends TrackTask {
  /** What the agent is asked to do (the first user message). */
  instruction: string;
  /** Shell script run in the fresh workspace before the agent starts; the agent never sees it. */
  setup?: string;
  /** The reference solution, a shell script run in the workspace; the oracle plays it. */
  solution?: string;
  /**
   * The test script (`run-tests.sh`), run after the agent with `$TEST_DIR` holding `testFiles`;
   * its output is read for pytest-style result lines.
   */
  runTests: string;
  /** Files of `tests/` by relative path: text, or bytes when not valid UTF-8. */
  testFiles: Record<string, string | Uint8Array>;
  /** The tests the run must report; unreported ones fail. Without it, whatever is reported counts. */
  testNames?: string[];
  /** Wall-clock budget of all the agent's commands together, in seconds. */
  agentTimeoutSec?: number;
  /** Wall-clock limit of the test run, in seconds. */
  testTimeoutSec?: number;
}

export { fnv1a, HELDOUT_EVERY, splitOfHash } from '../track.js';

/** The longest command the oracle passes inline; an argv string past 128 KiB cannot be exec'd. */
const INLINE_SOLUTION_LIMIT = 64 * 1024;

export const ORACLE_SCRIPT_PATH = '.clawray-solution.sh';

function call(id: string, name: string, args: Record<string, unknown>): ToolCall {
  return { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

/**
 * The oracle of a solution script: one `shell_exec` of it (through a file when it is too long for
 * one command), then a final message. Empty without a solution. The call turn has no text: SFT
 * on oracle traces would otherwise teach the policy to narrate a "reference solution" it does not
 * have before every command.
 */
export function oracleFor(solution: string | undefined): Action[] {
  if (solution === undefined) return [];
  const run: Action =
    solution.length <= INLINE_SOLUTION_LIMIT
      ? {
          content: null,
          tool_calls: [call('oracle_1', 'shell_exec', { command: solution })],
        }
      : {
          content: null,
          tool_calls: [
            call('oracle_1', 'write_file', { path: ORACLE_SCRIPT_PATH, content: solution }),
            call('oracle_2', 'shell_exec', {
              command: `bash ${ORACLE_SCRIPT_PATH}; status=$?; rm -f ${ORACLE_SCRIPT_PATH}; exit $status`,
            }),
          ],
        };
  return [run, { content: 'The task is done.' }];
}
