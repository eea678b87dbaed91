/** Types of results-table.mjs (plain JavaScript so that examples run with node alone). */
import type { Results } from './results.mjs';

export declare const RESULTS_BEGIN: string;
export declare const RESULTS_END: string;
export declare const NO_RESULTS: string;
export declare function renderResultsTable(results: Results | null): string;
export declare function replaceResultsTable(readme: string, table: string): string;
export declare function readResultsTable(readme: string): string;
