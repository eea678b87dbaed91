/**
 * Navigation pages: an editor's menu bar with nested menus (open a menu, a submenu, pick an
 * item) and a settings page with tabs (switch to a tab, change settings there, apply).
 */
import { click, type GuiDraft, type OracleCall, oracle, pick, type Rand, sample } from './drafts.js';
import { esc, js, renderPage } from './pages.js';

type MenuEntry = string | { label: string; items: string[] };

const MENUS: readonly { label: string; items: MenuEntry[] }[] = [
  {
    label: 'File',
    items: ['New', 'Open…', 'Save', { label: 'Export', items: ['PDF', 'Word document', 'Plain text'] }],
  },
  { label: 'Edit', items: ['Undo', 'Redo', 'Find and replace…', 'Select all'] },
  {
    label: 'Insert',
    items: ['Image', { label: 'Table', items: ['2 × 2', '3 × 3', '4 × 4'] }, 'Horizontal line'],
  },
  {
    label: 'Format',
    items: [
      'Bold',
      'Italic',
      { label: 'Text color', items: ['Red', 'Teal', 'Amber', 'Violet'] },
      { label: 'Align', items: ['Left', 'Center', 'Right', 'Justify'] },
    ],
  },
  {
    label: 'View',
    items: [{ label: 'Zoom', items: ['50%', '100%', '150%', '200%'] }, 'Show ruler', 'Full screen'],
  },
];

/** Every command of the menu bar as the labels on its path (menu, [submenu,] item). */
function menuPaths(): string[][] {
  const out: string[][] = [];
  for (const menu of MENUS) {
    for (const entry of menu.items) {
      if (typeof entry === 'string') out.push([menu.label, entry]);
      else for (const item of entry.items) out.push([menu.label, entry.label, item]);
    }
  }
  return out;
}

function menuMarkup(): string {
  const leaf = (path: string[]) =>
    `<button type="button" role="menuitem" data-path="${esc(path.join(' > '))}">${esc(path.at(-1)!)}</button>`;
  return MENUS.map((menu, m) => {
    const items = menu.items
      .map((entry, i) => {
        if (typeof entry === 'string') return leaf([menu.label, entry]);
        const id = `menu-${m}-${i}`;
        return `<div role="none" class="sub"><button type="button" role="menuitem" aria-haspopup="menu" aria-expanded="false" data-menu="${id}">${esc(entry.label)}<span class="arrow" aria-hidden="true">\u25b8</span></button><div role="menu" id="${id}" aria-label="${esc(entry.label)}" hidden>${entry.items
          .map((item) => leaf([menu.label, entry.label, item]))
          .join('')}</div></div>`;
      })
      .join('');
    return `<div role="none" class="top"><button type="button" role="menuitem" aria-haspopup="menu" aria-expanded="false" data-menu="menu-${m}">${esc(menu.label)}</button><div role="menu" id="menu-${m}" aria-label="${esc(menu.label)}" hidden>${items}</div></div>`;
  }).join('');
}

function menuPage(rand: Rand, index: number): GuiDraft {
  const paths = menuPaths();
  const deep = paths.filter((p) => p.length === 3);
  const shallow = paths.filter((p) => p.length === 2);
  const path = index % 3 === 2 ? pick(rand, shallow) : pick(rand, deep);
  const command = path.join(' > ');
  const html = renderPage({
    title: 'Untitled document',
    css: `
#menubar { display: flex; gap: 2px; background: #fff; border-bottom: 1px solid #d0d7de; padding: 4px 8px; }
.top, .sub { position: relative; }
#menubar button { border: none; border-radius: 4px; background: transparent; padding: 4px 12px; text-align: left; }
#menubar button:hover, #menubar button[aria-expanded=true] { background: #ddf4ff; }
[role=menu] { position: absolute; z-index: 5; top: 100%; left: 0; min-width: 200px; padding: 4px; background: #fff; border: 1px solid #8c959f; border-radius: 6px; box-shadow: 0 4px 12px rgba(0,0,0,.2); }
[role=menu] button { display: block; width: 100%; }
.sub > [role=menu] { top: -5px; left: 100%; }
.arrow { float: right; margin-left: 16px; }
#doc { margin: 24px 32px; padding: 24px; min-height: 300px; background: #fff; border: 1px solid #d0d7de; border-radius: 6px; }`,
    body: `<div id="menubar" role="menubar" aria-label="Editor menu">${menuMarkup()}</div>
<div id="doc"><h1>Untitled document</h1><p>Start typing your document here.</p><p id="status" class="status" role="status"></p></div>`,
    script: `
const state = { commands: [] };
window.__taskState = state;
const menus = [...document.querySelectorAll('[role=menu]')];
const owner = (menu) => document.querySelector('[data-menu="' + menu.id + '"]');
function close(keep) {
  for (const m of menus) {
    if (keep.includes(m)) continue;
    m.hidden = true;
    owner(m).setAttribute('aria-expanded', 'false');
  }
}
document.querySelectorAll('[aria-haspopup=menu]').forEach((button) => {
  button.addEventListener('click', () => {
    const menu = document.getElementById(button.dataset.menu);
    const opening = menu.hidden;
    close(menus.filter((m) => m.contains(button)));
    if (opening) { menu.hidden = false; button.setAttribute('aria-expanded', 'true'); }
  });
});
document.querySelectorAll('[data-path]').forEach((item) => {
  item.addEventListener('click', () => {
    state.commands.push(item.dataset.path);
    close([]);
    document.getElementById('status').textContent = 'Ran ' + item.dataset.path + '.';
  });
});
document.addEventListener('keydown', (e) => { if (e.key === 'Escape') close([]); });
document.addEventListener('click', (e) => { if (!e.target.closest('#menubar')) close([]); });`,
  });
  return {
    kind: 'menu',
    instruction: `Use the menu bar to run ${command}.`,
    html,
    goal: { state: { commands: [command] } },
    oracle: oracle(...path.map((label) => [click(`menuitem "${label}"`)])),
  };
}

type Setting =
  | { key: string; kind: 'radio'; label: string; options: readonly string[] }
  | { key: string; kind: 'check'; label: string };

const TABS: readonly { id: string; label: string; settings: Setting[] }[] = [
  {
    id: 'general',
    label: 'General',
    settings: [
      {
        key: 'language',
        kind: 'radio',
        label: 'Language',
        options: ['English', 'Deutsch', 'Español', 'Français'],
      },
      { key: 'newTabs', kind: 'check', label: 'Open links in new tabs' },
      { key: 'spellCheck', kind: 'check', label: 'Check spelling as I type' },
    ],
  },
  {
    id: 'privacy',
    label: 'Privacy',
    settings: [
      {
        key: 'cookies',
        kind: 'radio',
        label: 'Cookies',
        options: ['Allow all', 'Block third-party', 'Block all'],
      },
      { key: 'doNotTrack', kind: 'check', label: 'Send do-not-track requests' },
      { key: 'rememberPasswords', kind: 'check', label: 'Remember passwords' },
    ],
  },
  {
    id: 'notifications',
    label: 'Notifications',
    settings: [
      { key: 'emailAlerts', kind: 'check', label: 'Email alerts' },
      { key: 'pushNotifications', kind: 'check', label: 'Push notifications' },
      { key: 'weeklyDigest', kind: 'check', label: 'Weekly digest' },
    ],
  },
  {
    id: 'accessibility',
    label: 'Accessibility',
    settings: [
      {
        key: 'textSize',
        kind: 'radio',
        label: 'Text size',
        options: ['Small', 'Medium', 'Large', 'Extra large'],
      },
      { key: 'reduceMotion', kind: 'check', label: 'Reduce motion' },
      { key: 'highContrast', kind: 'check', label: 'High contrast' },
    ],
  },
];

function settingMarkup(s: Setting, value: string | boolean): string {
  if (s.kind === 'check') {
    return `<div class="check"><label><input type="checkbox" id="${s.key}"${value ? ' checked' : ''}> ${esc(s.label)}</label></div>`;
  }
  return `<fieldset><legend>${esc(s.label)}</legend>${s.options
    .map(
      (o) =>
        `<label><input type="radio" name="${s.key}" value="${esc(o)}"${o === value ? ' checked' : ''}> ${esc(o)}</label>`,
    )
    .join('')}</fieldset>`;
}

function tabsPage(rand: Rand): GuiDraft {
  const initial: Record<string, string | boolean> = {};
  for (const tab of TABS) {
    for (const s of tab.settings) initial[s.key] = s.kind === 'check' ? rand() < 0.5 : pick(rand, s.options);
  }
  const tab = pick(rand, TABS);
  const changed = sample(rand, tab.settings, 2);
  const target = { ...initial };
  const phrases: string[] = [];
  const clicks: OracleCall[] = [];
  for (const s of changed) {
    if (s.kind === 'check') {
      target[s.key] = !initial[s.key];
      phrases.push(`turn ${target[s.key] ? 'on' : 'off'} "${s.label}"`);
      clicks.push(click(`checkbox "${s.label}"`));
    } else {
      const value = pick(
        rand,
        s.options.filter((o) => o !== initial[s.key]),
      );
      target[s.key] = value;
      phrases.push(`set ${s.label} to "${value}"`);
      clicks.push(click(`radio "${value}"`));
    }
  }
  const tabs = TABS.map(
    (t, i) =>
      `<button type="button" role="tab" id="tab-${t.id}" aria-controls="panel-${t.id}" aria-selected="${i === 0}" tabindex="${i === 0 ? 0 : -1}">${esc(t.label)}</button>`,
  ).join('');
  const panels = TABS.map(
    (t, i) =>
      `<div role="tabpanel" id="panel-${t.id}" aria-labelledby="tab-${t.id}"${i === 0 ? '' : ' hidden'}>${t.settings
        .map((s) => settingMarkup(s, initial[s.key]))
        .join('')}</div>`,
  ).join('\n');
  const html = renderPage({
    title: 'Settings',
    css: `
[role=tablist] { display: flex; gap: 4px; border-bottom: 1px solid #d0d7de; margin: 0 0 16px; }
[role=tab] { border-radius: 6px 6px 0 0; border-bottom: none; background: #eef1f4; }
[role=tab][aria-selected=true] { background: #fff; font-weight: bold; }
[role=tabpanel] { min-height: 200px; padding: 8px 0; }
fieldset label { margin-right: 16px; }
.check { margin: 0 0 10px; }`,
    body: `<main>
<h1>Settings</h1>
<div role="tablist" aria-label="Settings sections">${tabs}</div>
${panels}
<button id="apply" type="button" class="primary">Apply changes</button>
<p id="status" class="status" role="status"></p>
</main>`,
    script: `
const SETTINGS = ${js(TABS.flatMap((t) => t.settings.map((s) => ({ key: s.key, kind: s.kind }))))};
const state = { applied: null };
window.__taskState = state;
const tabs = [...document.querySelectorAll('[role=tab]')];
function select(tab) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute('aria-selected', String(on));
    t.tabIndex = on ? 0 : -1;
    document.getElementById(t.getAttribute('aria-controls')).hidden = !on;
  }
  tab.focus();
}
tabs.forEach((t, i) => {
  t.addEventListener('click', () => select(t));
  t.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowRight') select(tabs[(i + 1) % tabs.length]);
    else if (e.key === 'ArrowLeft') select(tabs[(i + tabs.length - 1) % tabs.length]);
  });
});
document.getElementById('apply').addEventListener('click', () => {
  const applied = {};
  for (const s of SETTINGS) {
    applied[s.key] = s.kind === 'check'
      ? document.getElementById(s.key).checked
      : document.querySelector('input[name=' + s.key + ']:checked').value;
  }
  state.applied = applied;
  const st = document.getElementById('status');
  st.className = 'status ok';
  st.textContent = 'Settings applied.';
});`,
  });
  return {
    kind: 'tabs',
    instruction: `In the ${tab.label} tab of the settings, ${phrases.join(' and ')}, then apply the changes.`,
    html,
    goal: { state: { applied: target } },
    oracle: oracle([click(`tab "${tab.label}"`)], clicks, [click('button "Apply changes"')]),
  };
}

export function menuBarPage(rand: Rand, index: number): GuiDraft {
  return menuPage(rand, index);
}

export function settingsTabsPage(rand: Rand, _index: number): GuiDraft {
  return tabsPage(rand);
}
