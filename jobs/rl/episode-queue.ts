/**
 * Hands the episodes of the groups a `StalenessGate` admits to the rollout slots: each group is
 * `samplesPerGroup` episodes of one prompt, and any free slot takes the next one.
 */
import type { StalenessGate } from './staleness-gate.js';

export interface EpisodeTicket {
  group: number;
  /** Which of the group's samples (0 … samplesPerGroup − 1). */
  index: number;
}

export class EpisodeQueue {
  private readonly queue: EpisodeTicket[] = [];
  private acquiring?: Promise<boolean>;

  constructor(
    private readonly gate: StalenessGate,
    private readonly samplesPerGroup: number,
  ) {}

  /** The next episode to play; undefined once the gate is closed. */
  async take(): Promise<EpisodeTicket | undefined> {
    for (;;) {
      const ticket = this.queue.shift();
      if (ticket) return ticket;
      // One acquire at a time, awaited by every idle slot: a group's episodes then start on
      // that many slots at once, not one after another on the slot that acquired it.
      this.acquiring ??= this.gate.acquire().then((group) => {
        this.acquiring = undefined;
        if (group === undefined) return false;
        for (let index = 0; index < this.samplesPerGroup; index++) this.queue.push({ group, index });
        return true;
      });
      if (!(await this.acquiring)) return undefined;
    }
  }
}
