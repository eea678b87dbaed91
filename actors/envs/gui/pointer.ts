/**
 * Pages made for the pointer: a slider whose value follows where its track is clicked, and a
 * canvas of shapes that has no accessibility tree inside it, so only the screenshot tells where
 * to click. Both are laid out at fixed CSS-pixel positions, which is what lets their oracles
 * click by coordinates computed here.
 */
import { click, clickAt, type GuiDraft, int, oracle, type Rand, sample } from './drafts.js';
import { esc, js, renderPage } from './pages.js';

/** The slider's track: value 0 at `left`, the maximum at `left + width`, centred on `y`. */
export const SLIDER_TRACK = { left: 200, y: 250, width: 400, intervals: 20 } as const;

const SLIDERS = [
  { label: 'Brightness', max: 20, unit: '' },
  { label: 'Volume', max: 100, unit: '%' },
  { label: 'Temperature', max: 40, unit: ' °C' },
] as const;

function sliderX(value: number, max: number): number {
  const t = SLIDER_TRACK;
  return t.left + (value / max) * t.width;
}

function slider(rand: Rand, index: number): GuiDraft {
  const spec = SLIDERS[index % SLIDERS.length];
  const step = spec.max / SLIDER_TRACK.intervals;
  const before = int(rand, 0, SLIDER_TRACK.intervals) * step;
  let target = before;
  while (target === before) target = int(rand, 0, SLIDER_TRACK.intervals) * step;
  const t = SLIDER_TRACK;
  const ticks = [0, 5, 10, 15, 20]
    .map(
      (k) =>
        `<span class="tick" style="left: ${t.left + (k / t.intervals) * t.width - 20}px">${k * step}</span>`,
    )
    .join('');
  const html = renderPage({
    title: `${spec.label} control`,
    css: `
#label { position: absolute; left: ${t.left}px; top: ${t.y - 60}px; font-weight: bold; }
#band { position: absolute; left: ${t.left - 10}px; top: ${t.y - 16}px; width: ${t.width + 20}px; height: 32px; cursor: pointer; }
#line { position: absolute; left: 10px; top: 13px; width: ${t.width}px; height: 6px; border-radius: 3px; background: #d0d7de; }
#fill { position: absolute; left: 10px; top: 13px; height: 6px; border-radius: 3px; background: #1f6feb; }
#thumb { position: absolute; top: 6px; width: 20px; height: 20px; border-radius: 50%; background: #fff; border: 2px solid #1f6feb; }
.tick { position: absolute; top: ${t.y + 22}px; width: 40px; text-align: center; font-size: 12px; color: #59636e; }
#apply { position: absolute; left: ${t.left}px; top: ${t.y + 70}px; }
#status { position: absolute; left: ${t.left}px; top: ${t.y + 110}px; }`,
    body: `<main>
<h1>${esc(spec.label)}</h1>
<div id="label"><span id="name">${esc(spec.label)}</span>: <output id="value"></output></div>
<div id="band"><div id="line"></div><div id="fill"></div><div id="thumb" role="slider" tabindex="0" aria-labelledby="name" aria-valuemin="0" aria-valuemax="${spec.max}"></div></div>
${ticks}
<button id="apply" type="button" class="primary">Apply</button>
<p id="status" class="status" role="status"></p>
</main>`,
    script: `
const MAX = ${js(spec.max)}, STEP = ${js(step)}, UNIT = ${js(spec.unit)}, LEFT = ${t.left}, WIDTH = ${t.width};
const state = { value: ${js(before)}, applied: null };
window.__taskState = state;
const $ = (id) => document.getElementById(id);
const thumb = $('thumb');
function set(value) {
  state.value = Math.min(MAX, Math.max(0, Math.round(value / STEP) * STEP));
  const x = (state.value / MAX) * WIDTH;
  thumb.style.left = (x) + 'px';
  $('fill').style.width = x + 'px';
  thumb.setAttribute('aria-valuenow', String(state.value));
  thumb.setAttribute('aria-valuetext', state.value + UNIT);
  $('value').textContent = state.value + UNIT;
}
set(state.value);
let dragging = false;
const fromPointer = (e) => set(((e.clientX - LEFT) / WIDTH) * MAX);
$('band').addEventListener('pointerdown', (e) => { dragging = true; $('band').setPointerCapture(e.pointerId); fromPointer(e); thumb.focus(); });
$('band').addEventListener('pointermove', (e) => { if (dragging) fromPointer(e); });
$('band').addEventListener('pointerup', () => { dragging = false; });
thumb.addEventListener('keydown', (e) => {
  const moves = { ArrowRight: STEP, ArrowUp: STEP, ArrowLeft: -STEP, ArrowDown: -STEP, PageUp: 5 * STEP, PageDown: -5 * STEP };
  if (e.key in moves) set(state.value + moves[e.key]);
  else if (e.key === 'Home') set(0);
  else if (e.key === 'End') set(MAX);
  else return;
  e.preventDefault();
});
$('apply').addEventListener('click', () => {
  state.applied = state.value;
  $('status').className = 'status ok';
  $('status').textContent = ${js(spec.label)} + ' set to ' + state.value + UNIT + '.';
});`,
  });
  return {
    kind: 'slider',
    instruction: `Set the ${spec.label} slider to ${target}${spec.unit} and click Apply.`,
    html,
    goal: { state: { applied: target } },
    oracle: oracle([clickAt(sliderX(target, spec.max), t.y)], [click('button "Apply"')]),
  };
}

/** The canvas: `cols` × `rows` cells of `cell` px, a shape of radius `radius` centred in each. */
export const CANVAS_GRID = { left: 100, top: 100, cols: 4, rows: 3, cell: 150, radius: 40 } as const;

const COLORS: readonly [string, string][] = [
  ['red', '#d1242f'],
  ['blue', '#0969da'],
  ['green', '#1a7f37'],
  ['orange', '#e16f24'],
  ['purple', '#8250df'],
  ['gray', '#6e7781'],
];
const SHAPES = ['circle', 'square', 'triangle'] as const;

function canvas(rand: Rand, index: number): GuiDraft {
  const g = CANVAS_GRID;
  const combos = COLORS.flatMap(([color, hex]) => SHAPES.map((shape) => ({ color, hex, shape })));
  const cells = sample(rand, combos, g.cols * g.rows);
  const targets = sample(
    rand,
    cells.map((c, i) => ({ ...c, i })),
    index % 3 === 2 ? 2 : 1,
  );
  const names = targets.map((c) => `${c.color} ${c.shape}`);
  const centre = (i: number) => ({
    x: g.left + (i % g.cols) * g.cell + g.cell / 2,
    y: g.top + Math.floor(i / g.cols) * g.cell + g.cell / 2,
  });
  const height = g.rows * g.cell;
  const html = renderPage({
    title: 'Shapes',
    css: `
#shapes { position: absolute; left: ${g.left}px; top: ${g.top}px; border: 1px solid #d0d7de; background: #fff; cursor: crosshair; }
#status { position: absolute; left: ${g.left}px; top: ${g.top + height + 10}px; }`,
    body: `<main>
<h1>Shapes</h1>
<p>Click shapes on the canvas.</p>
<canvas id="shapes" role="img" aria-label="Shapes" width="${g.cols * g.cell}" height="${height}"></canvas>
<p id="status" class="status" role="status"></p>
</main>`,
    script: `
const CELLS = ${js(cells)}, COLS = ${g.cols}, CELL = ${g.cell}, R = ${g.radius};
const state = { clicks: [] };
window.__taskState = state;
const canvas = document.getElementById('shapes');
const ctx = canvas.getContext('2d');
ctx.strokeStyle = '#eaeef2';
for (let c = 1; c < COLS; c++) { ctx.beginPath(); ctx.moveTo(c * CELL + 0.5, 0); ctx.lineTo(c * CELL + 0.5, canvas.height); ctx.stroke(); }
for (let r = 1; r * CELL < canvas.height; r++) { ctx.beginPath(); ctx.moveTo(0, r * CELL + 0.5); ctx.lineTo(canvas.width, r * CELL + 0.5); ctx.stroke(); }
CELLS.forEach((s, i) => {
  const x = (i % COLS) * CELL + CELL / 2, y = Math.floor(i / COLS) * CELL + CELL / 2;
  ctx.fillStyle = s.hex;
  ctx.beginPath();
  if (s.shape === 'circle') ctx.arc(x, y, R, 0, 2 * Math.PI);
  else if (s.shape === 'square') ctx.rect(x - R, y - R, 2 * R, 2 * R);
  else { ctx.moveTo(x, y - R); ctx.lineTo(x + R, y + R); ctx.lineTo(x - R, y + R); ctx.closePath(); }
  ctx.fill();
});
canvas.addEventListener('click', (e) => {
  const box = canvas.getBoundingClientRect();
  const x = e.clientX - box.left, y = e.clientY - box.top;
  const col = Math.floor(x / CELL), row = Math.floor(y / CELL);
  const i = row * COLS + col;
  if (col < 0 || col >= COLS || i < 0 || i >= CELLS.length) return;
  const cx = col * CELL + CELL / 2, cy = row * CELL + CELL / 2;
  if (Math.abs(x - cx) > R + 4 || Math.abs(y - cy) > R + 4) return;
  const name = CELLS[i].color + ' ' + CELLS[i].shape;
  state.clicks.push(name);
  document.getElementById('status').textContent = 'You clicked the ' + name + '.';
});`,
  });
  const instruction =
    names.length === 1
      ? `On the canvas, click the ${names[0]} (and no other shape).`
      : `On the canvas, click the ${names[0]} and then the ${names[1]} (and no other shape).`;
  return {
    kind: 'canvas',
    instruction,
    html,
    goal: { state: { clicks: names } },
    oracle: oracle(
      ...targets.map((c) => {
        const p = centre(c.i);
        return [clickAt(p.x, p.y)];
      }),
    ),
  };
}

export function sliderPage(rand: Rand, index: number): GuiDraft {
  return slider(rand, index);
}

export function canvasPage(rand: Rand, index: number): GuiDraft {
  return canvas(rand, index);
}
