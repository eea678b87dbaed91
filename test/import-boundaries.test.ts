/**
 * The platform's folders (runtime/, head/, worker/) are used through their entry files only:
 * code outside a folder imports `<folder>/index.js`, never the files behind it, so those can
 * move and split without touching their users. `npm run lint` enforces it with Biome's
 * noRestrictedImports (biome.json); CI runs the tests, not lint, so this file holds the rule
 * there: it scans the tree itself, and checks that the Biome rule still rejects a deep import.
 * common/ and proto/, the shared kernel, are imported file by file and are not checked.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../common/package-root.js';

const PLATFORM = ['runtime', 'head', 'worker'];
const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;
const SKIP = new Set(['node_modules', 'dist', 'coverage']);
/** The comment that lets one deep import through (Biome's own suppression, with its reason). */
const SUPPRESSION = 'biome-ignore lint/style/noRestrictedImports';

interface DeepImport {
  /** The importing file and the file it reaches, both relative to the root. */
  from: string;
  to: string;
  suppressed: boolean;
}

function sourceFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || SKIP.has(entry.name)) continue;
      const path = join(dir, entry.name);
      // Plain folders and files only: a linked node_modules or checkout is not the project's source.
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile() && SOURCE.test(entry.name)) out.push(path);
    }
  };
  walk(root);
  return out;
}

/** The relative module specifiers a file names, each with the statement that names it. */
function specifiers(sf: ts.SourceFile): { spec: string; statement: ts.Node }[] {
  const out: { spec: string; statement: ts.Node }[] = [];
  const visit = (node: ts.Node, statement: ts.Node) => {
    let spec: ts.Node | undefined;
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier)
      spec = node.moduleSpecifier;
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword)
      spec = node.arguments[0];
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) spec = node.argument.literal;
    if (spec && ts.isStringLiteralLike(spec) && spec.text.startsWith('.'))
      out.push({ spec: spec.text, statement });
    node.forEachChild((child) => visit(child, statement));
  };
  for (const statement of sf.statements) visit(statement, statement);
  return out;
}

/** Every import, re-export, dynamic import and type import under `root` that reaches behind an entry file. */
function deepImports(root: string): DeepImport[] {
  const out: DeepImport[] = [];
  for (const file of sourceFiles(root)) {
    const from = relative(root, file).split(sep).join('/');
    const text = readFileSync(file, 'utf8');
    // A specifier that reaches into a platform folder names it: the other files need no parse.
    if (!PLATFORM.some((f) => text.includes(`${f}/`))) continue;
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    for (const { spec, statement } of specifiers(sf)) {
      const to = relative(root, resolve(dirname(file), spec))
        .split(sep)
        .join('/');
      const folder = PLATFORM.find((f) => to.startsWith(`${f}/`));
      if (!folder || from.startsWith(`${folder}/`) || to === `${folder}/index.js`) continue;
      // Biome's suppression is the comment right above the statement.
      const comments = ts.getLeadingCommentRanges(text, statement.getFullStart()) ?? [];
      const last = comments.at(-1);
      out.push({ from, to, suppressed: !!last && text.slice(last.pos, last.end).includes(SUPPRESSION) });
    }
  }
  return out;
}

describe('import boundaries', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'clawray-boundaries-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  const write = (dir: string, path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };

  it('nothing outside runtime/, head/ and worker/ imports behind their entry files', () => {
    const deep = deepImports(packageRoot());
    expect(
      deep.filter((d) => !d.suppressed).map((d) => `${d.from} imports ${d.to}`),
      'import the folder’s index.js instead',
    ).toEqual([]);
    // The deep imports let through, each for a reason given beside it: adding one is a choice to review.
    expect(deep.filter((d) => d.suppressed).map((d) => `${d.from} imports ${d.to}`)).toEqual([
      'test/k8s-redis.test.ts imports head/store/store.contract.js',
    ]);
  });

  it('the scan finds static, re-exported, dynamic and type deep imports, and lets siblings through', () => {
    const tree = join(scratch, 'tree');
    write(tree, 'runtime/cluster.ts', "import { a } from './codec.js';\nexport const c = a;\n");
    write(tree, 'runtime/index.ts', "export { c } from './cluster.js';\n");
    write(tree, 'cli/fine.ts', "import { c } from '../runtime/index.js';\nexport const x = c;\n");
    write(tree, 'cli/deep.ts', "import { c } from '../runtime/cluster.js';\nexport const x = c;\n");
    write(tree, 'jobs/rl/again.ts', "export { HeadServer } from '../../head/head-server.js';\n");
    write(tree, 'local/lazy.ts', "export const agent = () => import('../worker/node-agent.js');\n");
    write(tree, 'cli/typed.ts', "export type R = import('../runtime/views.js').ResourceMap;\n");
    write(
      tree,
      'test/hook.test.ts',
      "// biome-ignore lint/style/noRestrictedImports: a test-only hook\nimport {\n  hook,\n} from '../head/store/contract.js';\nexport { hook };\n",
    );
    const found = deepImports(tree).map(
      (d) => `${d.from} imports ${d.to}${d.suppressed ? ' (suppressed)' : ''}`,
    );
    expect(found.sort()).toEqual([
      'cli/deep.ts imports runtime/cluster.js',
      'cli/typed.ts imports runtime/views.js',
      'jobs/rl/again.ts imports head/head-server.js',
      'local/lazy.ts imports worker/node-agent.js',
      'test/hook.test.ts imports head/store/contract.js (suppressed)',
    ]);
  });

  it("Biome's rule rejects a deep import and says what to import instead", () => {
    // A copy of the project's Biome settings beside two scratch files, so the real tree is untouched.
    const project = join(scratch, 'biome');
    const config = JSON.parse(readFileSync(join(packageRoot(), 'biome.json'), 'utf8'));
    delete config.$schema;
    write(project, 'biome.json', JSON.stringify(config));
    write(
      project,
      'cli/deep.ts',
      "import { Cluster } from '../runtime/cluster.js';\nexport const c = Cluster;\n",
    );
    write(
      project,
      'cli/fine.ts',
      "import { Cluster } from '../runtime/index.js';\nexport const c = Cluster;\n",
    );
    const biome = createRequire(import.meta.url).resolve('@biomejs/biome/bin/biome');
    const lint = (file: string) =>
      spawnSync(process.execPath, [biome, 'lint', '--colors=off', file], { cwd: project, encoding: 'utf8' });

    const deep = lint('cli/deep.ts');
    expect(deep.status, deep.stdout + deep.stderr).not.toBe(0);
    expect(deep.stdout + deep.stderr).toContain('lint/style/noRestrictedImports');
    expect(deep.stdout + deep.stderr).toContain('import from runtime/index.js instead');
    const fine = lint('cli/fine.ts');
    expect(fine.status, fine.stdout + fine.stderr).toBe(0);
  });
});
