/** JSONL export/import shared by both buffer implementations; records are validated on import. */
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { ConfigError } from '../../common/errors.js';
import { parseTrajectoryRecord, type TrajectoryRecord } from './types.js';

/** Writes the records (given in pages) one per line; returns the count. */
export async function writeJsonl(file: string, pages: AsyncIterable<TrajectoryRecord[]>): Promise<number> {
  const out = createWriteStream(file, { encoding: 'utf8' });
  const failed = once(out, 'error').then(([err]) => {
    throw err;
  });
  failed.catch(() => {});
  let n = 0;
  for await (const page of pages) {
    let chunk = '';
    for (const r of page) chunk += `${JSON.stringify(r)}\n`;
    n += page.length;
    if (!out.write(chunk)) await Promise.race([once(out, 'drain'), failed]);
  }
  out.end();
  await Promise.race([once(out, 'finish'), failed]);
  return n;
}

/** Reads and validates a JSONL file in batches; errors name the file and line. */
export async function* readJsonl(file: string, batch = 500): AsyncGenerator<TrajectoryRecord[]> {
  const lines = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  let page: TrajectoryRecord[] = [];
  let lineNo = 0;
  for await (const line of lines) {
    lineNo++;
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw new ConfigError(`${file}:${lineNo}: not JSON: ${(err as Error).message}`, {
        fields: { file, line: lineNo },
      });
    }
    page.push(parseTrajectoryRecord(value, `${file}:${lineNo}`));
    if (page.length >= batch) {
      yield page;
      page = [];
    }
  }
  if (page.length > 0) yield page;
}
