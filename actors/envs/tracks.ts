/**
 * Tracks by name, and their task sources. Tracks load lazily: the gui track pulls in
 * playwright-core, which a toolcall job never needs.
 */
import { ConfigError } from '../../common/errors.js';
import { TRACK_NAMES, type Track, type TrackName, type TrackTask } from './track.js';

export function isTrackName(name: string): name is TrackName {
  return (TRACK_NAMES as readonly string[]).includes(name);
}

export async function loadTrack(name: string): Promise<Track> {
  if (!isTrackName(name)) {
    throw new ConfigError(`unknown track '${name}'; the tracks are ${TRACK_NAMES.join(', ')}`, {
      fields: { track: name },
    });
  }
  // Each cast forgets the track's own task type: callers pass tasks back to the same track.
  switch (name) {
    case 'toolcall':
      return (await import('./toolcall/track.js')).toolcallTrack as unknown as Track;
    case 'terminal':
      return (await import('./terminal/index.js')).terminalTrack as unknown as Track;
    case 'swe':
      return (await import('./swe/index.js')).sweTrack as unknown as Track;
    case 'gui':
      return (await import('./gui/index.js')).guiTrack as unknown as Track;
  }
}

/** `builtin` (the default) or a path in the track's task format. */
export type TaskSource = 'builtin' | (string & {});

export async function loadTasks(track: Track, source: TaskSource = 'builtin'): Promise<TrackTask[]> {
  return source === 'builtin' ? track.builtinTasks() : track.loadTasks(source);
}
