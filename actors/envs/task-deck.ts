/**
 * The tasks an environment plays: every task by id (an episode asked for by name), and the
 * split's tasks in a seeded shuffle drawn round-robin (an episode that names none). Shared by
 * the env tracks, each with its own random source so that a seed keeps drawing what it drew.
 */
import { ConfigError } from '../../common/errors.js';

export interface DeckTask {
  id: string;
  split?: string;
}

export class TaskDeck<T extends DeckTask> {
  private readonly byId: Map<string, T>;
  private readonly order: T[];
  private cursor = 0;

  /**
   * `split` 'all' takes every task; `random` draws the Fisher–Yates shuffle of the order. Throws
   * ConfigError when two tasks share an id or the split has none, naming `env`.
   */
  constructor(
    private readonly env: string,
    tasks: readonly T[],
    split: string,
    random: () => number,
  ) {
    this.byId = new Map(tasks.map((t) => [t.id, t]));
    if (this.byId.size !== tasks.length) throw new ConfigError(`${env} env: task ids must be unique`);
    this.order = split === 'all' ? [...tasks] : tasks.filter((t) => t.split === split);
    if (this.order.length === 0) throw new ConfigError(`${env} env: no tasks in split '${split}'`);
    for (let i = this.order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [this.order[i], this.order[j]] = [this.order[j], this.order[i]];
    }
  }

  /** The split's tasks in draw order. */
  get size(): number {
    return this.order.length;
  }

  /** The task named `taskId`, or the next of the shuffled split. */
  draw(taskId?: string): T {
    if (taskId === undefined) return this.order[this.cursor++ % this.order.length];
    const task = this.byId.get(taskId);
    if (!task) throw new Error(`${this.env} env: no task '${taskId}'`);
    return task;
  }
}
