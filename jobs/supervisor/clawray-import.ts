/**
 * Loaded with `node --import` in a job's Node processes (the supervisor puts it in
 * NODE_OPTIONS): registers the hooks that let them `import 'clawray'` from anywhere.
 */
import { register } from 'node:module';
import { packageRoot } from '../../common/package-root.js';
import type { HooksData } from './clawray-resolve-hooks.js';

register<HooksData>('./clawray-resolve-hooks.js', import.meta.url, {
  data: { packageRoot: packageRoot() },
});
