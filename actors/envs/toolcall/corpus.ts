/**
 * The document store shipped with the toolcall track: short passages about a fictional world,
 * so a model cannot know the answers without the `lookup` tool. Each fact a lookup task asks
 * about (see tasks.ts) is stated in exactly one passage.
 */

export interface Passage {
  id: string;
  title: string;
  text: string;
}

export const CORPUS: readonly Passage[] = [
  {
    id: 'doc-001',
    title: 'Velmora',
    text: 'Velmora is the capital city of the island nation of Quessia. It was founded in the year 1312 by the navigator Ortha Lindqvist. The city lies on the delta of the river Sarn.',
  },
  {
    id: 'doc-002',
    title: 'River Sarn',
    text: 'The river Sarn is the longest river of Quessia, flowing 418 kilometres from the Grell Mountains to the Velmora delta. Its largest tributary is the Ebbing Brook.',
  },
  {
    id: 'doc-003',
    title: 'Grell Mountains',
    text: 'The Grell Mountains form the northern spine of Quessia. Their highest summit, Mount Taskel, rises 3907 metres above sea level. The range is home to the snow hare.',
  },
  {
    id: 'doc-004',
    title: 'Quessian currency',
    text: 'The currency of Quessia is the kellin, divided into 64 pips. The kellin replaced the older silver drom in 1871.',
  },
  {
    id: 'doc-005',
    title: 'Ortha Lindqvist',
    text: 'Ortha Lindqvist was a navigator and cartographer born in the fishing village of Harrowmere. Her ship, the Gull of Ashes, was the first to chart the Quessian coast.',
  },
  {
    id: 'doc-006',
    title: 'Harrowmere',
    text: 'Harrowmere is a fishing village on the eastern coast of Quessia, famous for its blue-sailed boats. Its lighthouse was built by the engineer Piet Vallor.',
  },
  {
    id: 'doc-007',
    title: 'Quessian Academy of Sciences',
    text: 'The Quessian Academy of Sciences was established in 1704 in Velmora. Its first president was the astronomer Idris Kaul, who catalogued the comet Serevin.',
  },
  {
    id: 'doc-008',
    title: 'Comet Serevin',
    text: 'Comet Serevin is a periodic comet with an orbital period of 47 years. It was first catalogued by Idris Kaul and last passed the sun in 1986.',
  },
  {
    id: 'doc-009',
    title: 'Quessian cuisine',
    text: 'The national dish of Quessia is marrowcake, a baked pudding of barley and smoked eel. It is traditionally served with cloudberry jam.',
  },
  {
    id: 'doc-010',
    title: 'Lake Ommet',
    text: 'Lake Ommet is the largest lake of Quessia, with an area of 212 square kilometres. The lake is fed by the Ebbing Brook and drains into the river Sarn.',
  },
  {
    id: 'doc-011',
    title: 'Quessian parliament',
    text: 'The parliament of Quessia is called the Tollmoot and has 151 seats. It meets in the Amber Hall of Velmora.',
  },
  {
    id: 'doc-012',
    title: 'Snow hare',
    text: 'The snow hare is the national animal of Quessia. It lives above the tree line of the Grell Mountains and turns white each winter.',
  },
];

/** Parse a JSONL corpus (one {id, title, text} passage per line) for a custom DocumentStore. */
export function parseJsonlCorpus(jsonl: string): Passage[] {
  const passages: Passage[] = [];
  for (const [n, line] of jsonl.split('\n').entries()) {
    if (!line.trim()) continue;
    const p = JSON.parse(line) as Partial<Passage>;
    if (typeof p.id !== 'string' || typeof p.title !== 'string' || typeof p.text !== 'string') {
      throw new Error(`corpus line ${n + 1}: needs string id, title and text`);
    }
    passages.push({ id: p.id, title: p.title, text: p.text });
  }
  return passages;
}
