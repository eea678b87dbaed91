/**
 * The HTML shell the built-in task pages share. Every page is one self-contained document
 * (inline style and script, nothing fetched), keeps its state in `window.__taskState` (read by
 * the evaluator, so it must stay JSON) and lays itself out in CSS pixels from the top-left
 * corner with no body margin, so positions the generators compute are where things appear.
 */

export interface PageSpec {
  title: string;
  /** Page-specific CSS, after the shared sheet. */
  css?: string;
  /** The markup inside <body>. */
  body: string;
  /** The page's script, run at the end of <body> in strict mode inside its own scope. */
  script: string;
}

const SHARED_CSS = `
* { box-sizing: border-box; }
html, body { margin: 0; padding: 0; }
body { font: 15px/1.4 "DejaVu Sans", "Liberation Sans", Arial, sans-serif; color: #1f2328; background: #f6f8fa; }
main { position: relative; width: 800px; min-height: 600px; padding: 20px 32px; }
h1 { font-size: 22px; margin: 0 0 14px; }
h2 { font-size: 18px; margin: 0 0 12px; }
button { font: inherit; padding: 5px 14px; border: 1px solid #8c959f; border-radius: 6px; background: #fff; color: inherit; cursor: pointer; }
button:hover { background: #eef1f4; }
button.primary { background: #1f6feb; border-color: #1f6feb; color: #fff; }
button:disabled { opacity: 0.5; cursor: default; }
input[type=text], input[type=email], input[type=password], input[type=number] { font: inherit; padding: 4px 8px; border: 1px solid #8c959f; border-radius: 6px; width: 280px; background: #fff; }
label { cursor: pointer; }
fieldset { border: 1px solid #d0d7de; border-radius: 6px; margin: 0 0 10px; padding: 6px 12px 8px; }
legend { padding: 0 4px; font-weight: bold; }
.field { margin: 0 0 10px; }
.field > label, .field > .label { display: inline-block; width: 150px; font-weight: bold; }
.status { min-height: 22px; margin: 10px 0 0; font-weight: bold; }
.status.error { color: #cf222e; }
.status.ok { color: #1a7f37; }
dialog { border: 1px solid #8c959f; border-radius: 8px; padding: 18px 22px; width: 380px; }
dialog::backdrop { background: rgba(0, 0, 0, 0.35); }
.buttons { display: flex; gap: 10px; justify-content: flex-end; margin-top: 14px; }
`;

/** Escapes text for HTML content and double-quoted attributes. */
export function esc(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** A value as a JavaScript literal that is safe inside an inline <script>. */
export function js(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

export function renderPage(spec: PageSpec): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${esc(spec.title)}</title>
<style>${SHARED_CSS}${spec.css ?? ''}</style>
</head>
<body>
${spec.body}
<script>
(() => {
'use strict';
${spec.script}
})();
</script>
</body>
</html>
`;
}
