/**
 * List pages: a to-do list (type a task and press Enter, tick items, remove them) and a terms
 * page whose agreement checkbox stays disabled until the terms box is scrolled to its end.
 */
import {
  click,
  type GuiDraft,
  int,
  type OracleCall,
  oracle,
  pick,
  press,
  type Rand,
  sample,
  scrollAt,
  typeInto,
} from './drafts.js';
import { esc, js, renderPage } from './pages.js';

const CHORES = [
  'Water the plants',
  'Call the plumber',
  'Pay the electricity bill',
  'Book a dentist appointment',
  'Return the library books',
  'Buy a birthday card',
  'Renew the passport',
  'Clean the gutters',
  'Back up the laptop',
  'Order printer ink',
  'Defrost the freezer',
  'Walk the dog',
] as const;

interface Item {
  text: string;
  done: boolean;
}

function todo(rand: Rand, index: number): GuiDraft {
  const chosen = sample(rand, CHORES, 6);
  const initial: Item[] = chosen.slice(0, 4).map((text, i) => ({ text, done: i > 0 && rand() < 0.4 }));
  const fresh = chosen.slice(4);
  const expected = initial.map((i) => ({ ...i }));
  const open = initial.filter((i) => !i.done);
  const variant = index % 3;
  let instruction: string;
  let turns: OracleCall[][];
  if (variant === 0) {
    const mark = pick(rand, open).text;
    expected.push({ text: fresh[0], done: false });
    expected.find((i) => i.text === mark)!.done = true;
    instruction = `Add "${fresh[0]}" to the to-do list and mark "${mark}" as done.`;
    turns = [[typeInto('textbox "New task"', fresh[0]), press('Enter')], [click(`checkbox "${mark}"`)]];
  } else if (variant === 1) {
    expected.push({ text: fresh[0], done: false }, { text: fresh[1], done: false });
    instruction = `Add "${fresh[0]}" and then "${fresh[1]}" to the to-do list.`;
    turns = [
      [typeInto('textbox "New task"', fresh[0]), press('Enter')],
      [typeInto('textbox "New task"', fresh[1]), click('button "Add"')],
    ];
  } else {
    const mark = pick(rand, open).text;
    const others = initial.filter((i) => i.text !== mark);
    const remove = others[int(rand, 0, others.length - 1)].text;
    expected.splice(
      expected.findIndex((i) => i.text === remove),
      1,
    );
    expected.find((i) => i.text === mark)!.done = true;
    instruction = `Remove "${remove}" from the to-do list and mark "${mark}" as done.`;
    turns = [[click(`button "Remove ${remove}"`)], [click(`checkbox "${mark}"`)]];
  }
  const html = renderPage({
    title: 'To-do list',
    css: `
#items { list-style: none; padding: 0; margin: 16px 0 0; width: 520px; }
#items li { display: flex; justify-content: space-between; align-items: center; padding: 6px 10px; margin: 0 0 6px; background: #fff; border: 1px solid #d0d7de; border-radius: 6px; }
#items li.done label { text-decoration: line-through; color: #59636e; }
#items li button { padding: 0 8px; }
#add .label { font-weight: bold; margin-right: 10px; }`,
    body: `<main>
<h1>To-do list</h1>
<form id="add" novalidate><label for="new" class="label">New task</label><input id="new" type="text" autocomplete="off"> <button type="submit">Add</button></form>
<ul id="items" aria-label="Tasks"></ul>
<p id="status" class="status" role="status"></p>
</main>`,
    script: `
const state = { items: ${js(initial)} };
window.__taskState = state;
const list = document.getElementById('items');
const input = document.getElementById('new');
function status(kind, text) { const s = document.getElementById('status'); s.className = 'status ' + kind; s.textContent = text; }
function row(item) {
  const li = document.createElement('li');
  li.className = item.done ? 'done' : '';
  const label = document.createElement('label');
  const box = document.createElement('input');
  box.type = 'checkbox';
  box.checked = item.done;
  box.addEventListener('change', () => { item.done = box.checked; li.className = item.done ? 'done' : ''; });
  label.append(box, ' ' + item.text);
  const remove = document.createElement('button');
  remove.type = 'button';
  remove.textContent = '\\u2715';
  remove.setAttribute('aria-label', 'Remove ' + item.text);
  remove.addEventListener('click', () => {
    state.items.splice(state.items.indexOf(item), 1);
    li.remove();
    status('ok', 'Removed "' + item.text + '".');
  });
  li.append(label, remove);
  return li;
}
for (const item of state.items) list.append(row(item));
document.getElementById('add').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text) { status('error', 'Type a task first.'); return; }
  if (state.items.some((i) => i.text.toLowerCase() === text.toLowerCase())) { status('error', '"' + text + '" is already on the list.'); return; }
  const item = { text, done: false };
  state.items.push(item);
  list.append(row(item));
  input.value = '';
  status('ok', 'Added "' + text + '".');
});`,
  });
  return { kind: 'todo', instruction, html, goal: { state: { items: expected } }, oracle: oracle(...turns) };
}

const CLAUSE_SUBJECTS = [
  'The Service',
  'Your account',
  'Any content you upload',
  'The subscription fee',
  'Personal data',
  'This agreement',
  'The provider',
  'Support requests',
] as const;
const CLAUSE_VERBS = [
  'may be suspended when',
  'is governed by the law of the place where',
  'remains your property unless',
  'is billed monthly in advance, except where',
  'is processed only as described in the privacy notice, and only while',
  'may change with thirty days of notice whenever',
  'is answered within two business days provided that',
] as const;
const CLAUSE_CONDITIONS = [
  'the account is used in breach of these terms',
  'the provider is required to do so by law',
  'a payment remains outstanding for more than fourteen days',
  'you ask for it in writing',
  'the plan you chose is discontinued',
  'the Service is offered in your region',
  'both parties agree otherwise',
] as const;
const SECTIONS = [
  'Acceptance',
  'Accounts',
  'Fees and billing',
  'Acceptable use',
  'Your content',
  'Privacy',
  'Availability',
  'Support',
  'Termination',
  'Liability',
  'Changes to these terms',
  'Governing law',
] as const;

/** The terms box's place on the page: a scroll aimed at its middle scrolls it. */
export const TERMS_BOX = { left: 32, top: 170, width: 736, height: 250 } as const;

function terms(rand: Rand): GuiDraft {
  const plan = pick(rand, ['Basic', 'Pro', 'Team'] as const);
  const marketingBefore = rand() < 0.5;
  const marketing = rand() < 0.5;
  const sections = SECTIONS.map((title, i) => {
    const sentences = Array.from(
      { length: 3 },
      () => `${pick(rand, CLAUSE_SUBJECTS)} ${pick(rand, CLAUSE_VERBS)} ${pick(rand, CLAUSE_CONDITIONS)}.`,
    );
    return `<h3>${i + 1}. ${esc(title)}</h3><p>${esc(sentences.join(' '))}</p>`;
  }).join('\n');
  const b = TERMS_BOX;
  const html = renderPage({
    title: 'Terms of service',
    css: `
fieldset label { margin-right: 16px; }
#terms-title { position: absolute; left: ${b.left}px; top: ${b.top - 34}px; margin: 0; }
#terms { position: absolute; left: ${b.left}px; top: ${b.top}px; width: ${b.width}px; height: ${b.height}px; overflow-y: auto; background: #fff; border: 1px solid #8c959f; border-radius: 6px; padding: 0 16px; }
#terms h3 { font-size: 15px; margin: 12px 0 4px; }
#terms p { margin: 0 0 8px; }
#after { position: absolute; left: ${b.left}px; top: ${b.top + b.height + 14}px; width: ${b.width}px; }
#after .check { margin: 0 0 8px; }
#hint { color: #59636e; font-size: 13px; margin: 0 0 8px; }`,
    body: `<main>
<h1>Choose a plan and accept the terms</h1>
<fieldset><legend>Plan</legend>${['Basic', 'Pro', 'Team']
      .map(
        (p, i) =>
          `<label><input type="radio" name="plan" value="${p}"${i === 0 ? ' checked' : ''}> ${p}</label>`,
      )
      .join('')}</fieldset>
<h2 id="terms-title">Terms of service</h2>
<div id="terms" role="region" aria-label="Terms of service" tabindex="0">
${sections}
<p><strong>End of the terms.</strong></p>
</div>
<div id="after">
  <p id="hint">Scroll to the end of the terms to enable the agreement checkbox.</p>
  <div class="check"><label><input id="agree" type="checkbox" disabled> I have read and agree to the terms</label></div>
  <div class="check"><label><input id="marketing" type="checkbox"${marketingBefore ? ' checked' : ''}> Send me marketing email</label></div>
  <div class="buttons" style="justify-content: flex-start"><button id="accept" type="button" class="primary">Accept</button><button id="decline" type="button">Decline</button></div>
  <p id="status" class="status" role="status"></p>
</div>
</main>`,
    script: `
const state = { readToEnd: false, accepted: null, declined: false };
window.__taskState = state;
const $ = (id) => document.getElementById(id);
const box = $('terms');
function status(kind, text) { const s = $('status'); s.className = 'status ' + kind; s.textContent = text; }
box.addEventListener('scroll', () => {
  if (!state.readToEnd && box.scrollTop + box.clientHeight >= box.scrollHeight - 4) {
    state.readToEnd = true;
    $('agree').disabled = false;
    $('hint').textContent = 'You have read the terms.';
  }
});
$('accept').addEventListener('click', () => {
  if (!$('agree').checked) { status('error', 'Tick "I have read and agree to the terms" first.'); return; }
  const plan = document.querySelector('input[name=plan]:checked').value;
  state.accepted = { plan, marketing: $('marketing').checked };
  state.declined = false;
  status('ok', 'Welcome to the ' + plan + ' plan.');
});
$('decline').addEventListener('click', () => {
  state.accepted = null;
  state.declined = true;
  status('error', 'You declined the terms.');
});`,
  });
  const choices: OracleCall[] = [];
  if (plan !== 'Basic') choices.push(click(`radio "${plan}"`));
  if (marketing !== marketingBefore) choices.push(click('checkbox "Send me marketing email"'));
  return {
    kind: 'terms',
    instruction:
      `Choose the ${plan} plan, ${marketing ? 'opt in to' : 'opt out of'} marketing email, read the terms ` +
      'of service to the end, agree to them and accept.',
    html,
    goal: { state: { accepted: { plan, marketing } } },
    oracle: oracle(
      choices,
      [scrollAt(b.left + b.width / 2, b.top + b.height / 2, 5000)],
      [click('checkbox "I have read and agree to the terms"')],
      [click('button "Accept"')],
    ),
  };
}

export function todoPage(rand: Rand, index: number): GuiDraft {
  return todo(rand, index);
}

export function termsPage(rand: Rand, _index: number): GuiDraft {
  return terms(rand);
}
