/**
 * The README's results table is examples/results.json, rendered: an edit to one without the
 * other fails here (regenerate both with `node examples/measure.mjs`). Until the first
 * measurement there is no JSON, and the markers hold the note that says how to make one.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../common/package-root.js';
import { parseResults, staleTracks } from '../examples/results.mjs';
import { NO_RESULTS, readResultsTable, renderResultsTable } from '../examples/results-table.mjs';

const root = packageRoot();
const resultsFile = join(root, 'examples', 'results.json');
const readme = () => readFileSync(join(root, 'README.md'), 'utf8');

describe("the README's results table", () => {
  it('equals renderResultsTable(examples/results.json), whose aggregates are its runs', (ctx) => {
    if (!existsSync(resultsFile)) {
      ctx.skip('examples/results.json does not exist yet: run node examples/measure.mjs --seeds 3');
    }
    const results = parseResults(JSON.parse(readFileSync(resultsFile, 'utf8')));
    expect(staleTracks(results)).toEqual([]);
    expect(readResultsTable(readme())).toBe(renderResultsTable(results));
  });

  it('holds the no-measurement note while there is no examples/results.json', (ctx) => {
    if (existsSync(resultsFile)) ctx.skip('examples/results.json exists: the test above compares it');
    expect(readResultsTable(readme())).toBe(NO_RESULTS);
  });
});
