import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { seededRandom } from '../../common/random.js';
import { TaskDeck } from './task-deck.js';

const tasks = ['a', 'b', 'c', 'd', 'e'].map((id, i) => ({ id, split: i < 3 ? 'train' : 'test' }));

describe('TaskDeck', () => {
  it("draws the split's tasks in a seeded shuffle, round-robin, and any task by id", () => {
    const deck = new TaskDeck('demo', tasks, 'train', seededRandom(3));
    const drawn = Array.from({ length: 6 }, () => deck.draw().id);
    expect(new Set(drawn.slice(0, 3))).toEqual(new Set(['a', 'b', 'c']));
    expect(drawn.slice(3)).toEqual(drawn.slice(0, 3));
    expect(deck.draw('e').id).toBe('e');
    // The same seed draws the same order; by-id draws do not move the cursor.
    const again = new TaskDeck('demo', tasks, 'train', seededRandom(3));
    expect(Array.from({ length: 3 }, () => again.draw().id)).toEqual(drawn.slice(0, 3));
    expect(new TaskDeck('demo', tasks, 'all', seededRandom(0)).size).toBe(5);
  });

  it('refuses an empty split, duplicate ids and an unknown task, naming the env', () => {
    expect(() => new TaskDeck('demo', tasks, 'dev', seededRandom(0))).toThrow(ConfigError);
    expect(() => new TaskDeck('demo', tasks, 'dev', seededRandom(0))).toThrow(
      "demo env: no tasks in split 'dev'",
    );
    expect(() => new TaskDeck('demo', [...tasks, tasks[0]], 'all', seededRandom(0))).toThrow(
      'demo env: task ids must be unique',
    );
    expect(() => new TaskDeck('demo', tasks, 'all', seededRandom(0)).draw('zz')).toThrow(
      "demo env: no task 'zz'",
    );
  });
});
