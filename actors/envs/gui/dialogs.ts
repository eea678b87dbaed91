/**
 * Dialog pages, each built on a native modal <dialog>: preferences with switches (saved only by
 * Save; Cancel and Escape discard), deleting projects behind a confirmation, and renaming a
 * document in a dialog with a text field.
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
  typeInto,
} from './drafts.js';
import { esc, js, renderPage } from './pages.js';

const SWITCHES = [
  { key: 'darkMode', label: 'Dark mode' },
  { key: 'notifications', label: 'Notifications' },
  { key: 'autoSave', label: 'Auto-save' },
  { key: 'compactView', label: 'Compact view' },
] as const;

const DIALOG_CSS = `
.switch-row { display: flex; justify-content: space-between; align-items: center; margin: 0 0 10px; }
[role=switch] { width: 46px; height: 24px; padding: 0; border-radius: 12px; background: #d0d7de; position: relative; }
[role=switch]::after { content: ''; position: absolute; top: 2px; left: 2px; width: 18px; height: 18px; border-radius: 50%; background: #fff; border: 1px solid #8c959f; }
[role=switch][aria-checked=true] { background: #1f6feb; border-color: #1f6feb; }
[role=switch][aria-checked=true]::after { left: 24px; }
.rows { list-style: none; padding: 0; margin: 0 0 12px; width: 520px; }
.rows li { display: flex; justify-content: space-between; align-items: center; padding: 6px 10px; margin: 0 0 6px; background: #fff; border: 1px solid #d0d7de; border-radius: 6px; }
button.danger { background: #cf222e; border-color: #cf222e; color: #fff; }`;

function preferences(rand: Rand): GuiDraft {
  const initial: Record<string, boolean> = {};
  for (const s of SWITCHES) initial[s.key] = rand() < 0.5;
  const flips = sample(rand, SWITCHES, int(rand, 1, 2));
  const target = { ...initial };
  for (const s of flips) target[s.key] = !initial[s.key];
  const rows = SWITCHES.map(
    (s) =>
      `<div class="switch-row"><span id="${s.key}-label">${esc(s.label)}</span><button type="button" role="switch" id="${s.key}" aria-labelledby="${s.key}-label" aria-checked="false"></button></div>`,
  ).join('');
  const html = renderPage({
    title: 'Workspace',
    css: DIALOG_CSS,
    body: `<main>
<h1>Workspace</h1>
<p>Current preferences:</p>
<ul id="summary"></ul>
<button id="open" type="button">Preferences</button>
<p id="status" class="status" role="status"></p>
<dialog id="prefs" aria-labelledby="prefs-title">
  <h2 id="prefs-title">Preferences</h2>
  ${rows}
  <div class="buttons"><button id="cancel" type="button">Cancel</button><button id="save" type="button" class="primary">Save</button></div>
</dialog>
</main>`,
    script: `
const SWITCHES = ${js(SWITCHES)};
const state = { settings: ${js(initial)} };
window.__taskState = state;
const $ = (id) => document.getElementById(id);
const dialog = $('prefs');
function summarize() {
  $('summary').innerHTML = '';
  for (const s of SWITCHES) {
    const li = document.createElement('li');
    li.textContent = s.label + ': ' + (state.settings[s.key] ? 'on' : 'off');
    $('summary').append(li);
  }
}
summarize();
for (const s of SWITCHES) {
  $(s.key).addEventListener('click', () => {
    const b = $(s.key);
    b.setAttribute('aria-checked', String(b.getAttribute('aria-checked') !== 'true'));
  });
}
$('open').addEventListener('click', () => {
  for (const s of SWITCHES) $(s.key).setAttribute('aria-checked', String(state.settings[s.key]));
  dialog.showModal();
});
$('cancel').addEventListener('click', () => dialog.close());
$('save').addEventListener('click', () => {
  const settings = {};
  for (const s of SWITCHES) settings[s.key] = $(s.key).getAttribute('aria-checked') === 'true';
  state.settings = settings;
  dialog.close();
  summarize();
  $('status').className = 'status ok';
  $('status').textContent = 'Preferences saved.';
});`,
  });
  const phrases = flips.map((s) => `turn ${target[s.key] ? 'on' : 'off'} "${s.label}"`);
  return {
    kind: 'dialog',
    instruction: `Open the preferences, ${phrases.join(' and ')}, and save.`,
    html,
    goal: { state: { settings: target } },
    oracle: oracle(
      [click('button "Preferences"')],
      flips.map((s) => click(`switch "${s.label}"`)),
      [click('button "Save"')],
    ),
  };
}

const PROJECTS = [
  'Orion',
  'Vega',
  'Nimbus',
  'Atlas',
  'Juniper',
  'Halcyon',
  'Kestrel',
  'Lumen',
  'Sequoia',
  'Tundra',
] as const;

function deleteProjects(rand: Rand): GuiDraft {
  const projects = sample(rand, PROJECTS, 5);
  const doomed = sample(rand, projects, int(rand, 1, 2));
  const kept = projects.filter((p) => !doomed.includes(p));
  const html = renderPage({
    title: 'Projects',
    css: DIALOG_CSS,
    body: `<main>
<h1>Projects</h1>
<ul id="projects" class="rows" aria-label="Projects"></ul>
<p id="status" class="status" role="status"></p>
<dialog id="confirm" aria-labelledby="confirm-title">
  <h2 id="confirm-title">Delete project?</h2>
  <p>Delete the project <strong id="victim"></strong>? This cannot be undone.</p>
  <div class="buttons"><button id="no" type="button">Cancel</button><button id="yes" type="button" class="danger">Delete</button></div>
</dialog>
</main>`,
    script: `
const state = { projects: ${js(projects)} };
window.__taskState = state;
const $ = (id) => document.getElementById(id);
const dialog = $('confirm');
let pending = null;
for (const name of state.projects) {
  const li = document.createElement('li');
  const label = document.createElement('span');
  label.textContent = name;
  const del = document.createElement('button');
  del.type = 'button';
  del.textContent = 'Delete';
  del.setAttribute('aria-label', 'Delete ' + name);
  del.addEventListener('click', () => { pending = { name, li }; $('victim').textContent = name; dialog.showModal(); });
  li.append(label, del);
  $('projects').append(li);
}
$('no').addEventListener('click', () => dialog.close());
dialog.addEventListener('close', () => { pending = null; });
$('yes').addEventListener('click', () => {
  if (pending) {
    state.projects = state.projects.filter((p) => p !== pending.name);
    pending.li.remove();
    $('status').className = 'status ok';
    $('status').textContent = 'Deleted ' + pending.name + '.';
  }
  dialog.close();
});`,
  });
  const names = doomed.map((p) => `"${p}"`).join(' and ');
  return {
    kind: 'dialog',
    instruction: `Delete the project${doomed.length > 1 ? 's' : ''} ${names} (confirm each deletion) and keep all the others.`,
    html,
    goal: { state: { projects: kept } },
    oracle: oracle(...doomed.flatMap((p) => [[click(`button "Delete ${p}"`)], [click('button "Delete"')]])),
  };
}

const DOCUMENTS = [
  'Draft 3',
  'Budget 2024',
  'Meeting notes',
  'Roadmap',
  'Invoice template',
  'Reading list',
  'Packing list',
] as const;
const NEW_NAMES = [
  'Q3 report',
  'Final budget',
  'Launch plan',
  'Onboarding guide',
  'Minutes of March',
] as const;

function renameDocument(rand: Rand): GuiDraft {
  const documents = sample(rand, DOCUMENTS, 4);
  const old = pick(rand, documents);
  const fresh = pick(rand, NEW_NAMES);
  const html = renderPage({
    title: 'Documents',
    css: `${DIALOG_CSS}
#new-name { width: 100%; margin: 6px 0 0; }`,
    body: `<main>
<h1>Documents</h1>
<ul id="docs" class="rows" aria-label="Documents"></ul>
<p id="status" class="status" role="status"></p>
<dialog id="rename" aria-labelledby="rename-title">
  <form id="rename-form" novalidate>
    <h2 id="rename-title">Rename document</h2>
    <label for="new-name">New name</label>
    <input id="new-name" type="text" autocomplete="off">
    <p id="rename-error" class="status error"></p>
    <div class="buttons"><button id="rename-cancel" type="button">Cancel</button><button type="submit" class="primary">Rename</button></div>
  </form>
</dialog>
</main>`,
    script: `
const state = { documents: ${js(documents)} };
window.__taskState = state;
const $ = (id) => document.getElementById(id);
const dialog = $('rename');
let target = null;
function row(index) {
  const li = document.createElement('li');
  const label = document.createElement('span');
  const button = document.createElement('button');
  button.type = 'button';
  button.textContent = 'Rename';
  const show = () => { label.textContent = state.documents[index]; button.setAttribute('aria-label', 'Rename ' + state.documents[index]); };
  show();
  button.addEventListener('click', () => {
    target = { index, show };
    $('new-name').value = state.documents[index];
    $('rename-error').textContent = '';
    dialog.showModal();
    $('new-name').select();
  });
  li.append(label, button);
  return li;
}
state.documents.forEach((_, i) => $('docs').append(row(i)));
$('rename-cancel').addEventListener('click', () => dialog.close());
$('rename-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const name = $('new-name').value.trim();
  if (!target) return;
  if (!name) { $('rename-error').textContent = 'A name cannot be empty.'; return; }
  if (state.documents.some((d, i) => i !== target.index && d.toLowerCase() === name.toLowerCase())) {
    $('rename-error').textContent = 'Another document is already called "' + name + '".';
    return;
  }
  const before = state.documents[target.index];
  state.documents = state.documents.map((d, i) => (i === target.index ? name : d));
  target.show();
  dialog.close();
  $('status').className = 'status ok';
  $('status').textContent = 'Renamed "' + before + '" to "' + name + '".';
});`,
  });
  const steps: OracleCall[][] = [
    [click(`button "Rename ${old}"`)],
    [typeInto('textbox "New name"', fresh), press('Enter')],
  ];
  return {
    kind: 'dialog',
    instruction: `Rename the document "${old}" to "${fresh}".`,
    html,
    goal: { state: { documents: documents.map((d) => (d === old ? fresh : d)) } },
    oracle: oracle(...steps),
  };
}

export function dialogPage(rand: Rand, index: number): GuiDraft {
  const make = [preferences, deleteProjects, renameDocument][index % 3];
  return make(rand);
}
