/**
 * The container images' Dockerfiles, checked without Docker (this machine has none): parsed
 * with dockerfile-ast, then held against what they must agree with — the CLI (HEALTHCHECK),
 * package.json (what to ship, the build command, the executable), the Kubernetes manifests
 * (user id, ports), onnxruntime-node's installer (the CUDA provider) and package-lock.json (the
 * TensorFlow.js version tfjs-node-gpu must match).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Command } from 'commander';
import { type Copy, type Dockerfile, DockerfileParser, type Instruction } from 'dockerfile-ast';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CHROMIUM_PATH } from '../actors/envs/gui/browser.js';
import { HEALTH_ADDRESS_ENV, registerHealthCommand } from '../cli/health-command.js';
import { packageRoot } from '../common/package-root.js';
import { DEFAULT_HEAD_PORT } from '../head/index.js';
import { find, K8sTree, kubectlVersion } from './helpers/kustomize.js';

const root = packageRoot();
const read = (rel: string) => readFileSync(join(root, rel), 'utf8');
const pkg = JSON.parse(read('package.json'));

interface Stage {
  name: string | null;
  image: string;
  instructions: Instruction[];
}

function parse(rel: string) {
  const df = DockerfileParser.parse(read(rel));
  const stages: Stage[] = [];
  for (const i of df.getInstructions()) {
    if (i.getKeyword() === 'FROM') {
      const args = i.getArguments().map((a) => a.getValue());
      stages.push({ name: args[2] ?? null, image: args[0], instructions: [] });
    } else stages.at(-1)?.instructions.push(i);
  }
  return { df, stages, final: stages.at(-1)! };
}

/** The default of an ARG, as the build would use it without --build-arg. */
function argDefault(df: Dockerfile, stages: Stage[], name: string): string {
  const all = [
    ...df.getInitialARGs(),
    ...stages.flatMap((s) => s.instructions.filter((i) => i.getKeyword() === 'ARG')),
  ];
  for (const a of all) {
    const [key, ...rest] = (a.getArgumentsContent() ?? '').split('=');
    if (key === name) return rest.join('=').replace(/^"(.*)"$/, '$1');
  }
  throw new Error(`no ARG ${name}`);
}

const of = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.getKeyword() === keyword);
const content = (i: Instruction) => i.getArgumentsContent() ?? '';
const runs = (stage: Stage) => of(stage, 'RUN').map(content).join('\n');

/** `clawray …` args as the CLI would parse them, or the problem. */
function parseClawray(args: string[]) {
  const program = new Command().exitOverride();
  registerHealthCommand(program);
  const cmd = program.commands.find((c) => c.name() === args[0]);
  if (!cmd) return { command: undefined, unknown: args };
  cmd.exitOverride();
  const { unknown, operands } = cmd.parseOptions(args.slice(1));
  return { command: cmd.name(), unknown: [...unknown, ...operands], opts: cmd.opts() };
}

const DOCKERFILES = ['k8s/images/Dockerfile', 'k8s/images/Dockerfile.gpu'];

describe.each(DOCKERFILES)('%s', (rel) => {
  const { df, stages, final } = parse(rel);

  it("skips onnxruntime-node's CUDA download at npm ci with its own variable (npm ≥ 11.2 warns of it in .npmrc)", () => {
    const build = stages.find((s) => s.name === 'build')!;
    const at = (keyword: string, pattern: RegExp) =>
      build.instructions.findIndex((i) => i.getKeyword() === keyword && pattern.test(content(i)));
    const skip = at('ENV', /^ONNXRUNTIME_NODE_INSTALL=skip$/);
    expect(skip, 'ENV ONNXRUNTIME_NODE_INSTALL=skip in the build stage').toBeGreaterThanOrEqual(0);
    expect(skip).toBeLessThan(at('RUN', /\bnpm ci\b/));
    expect(read('.npmrc')).not.toMatch(/onnxruntime/);
  });

  it('runs as a numeric non-root user it creates, the one the manifests run as', () => {
    const users = of(final, 'USER').map(content);
    expect(users).toHaveLength(1);
    const [user, group] = users[0].split(':');
    const uidArg = /^\$\{(\w+)\}$/.exec(user)?.[1];
    expect(uidArg, 'USER names the uid ARG').toBeDefined();
    const uid = Number(argDefault(df, stages, uidArg!));
    expect(Number.isInteger(uid) && uid > 0).toBe(true);
    expect(group).toBe(user);
    expect(runs(final)).toContain(`useradd --uid "\${${uidArg}}"`);
    // The USER comes after every RUN, so nothing later runs as root.
    const keywords = final.instructions.map((i) => i.getKeyword());
    expect(keywords.lastIndexOf('RUN')).toBeLessThan(keywords.indexOf('USER'));
    manifestUids.check(uid);
  });

  it('has tini as PID 1 in front of clawray, installed from the distribution', () => {
    const [entrypoint] = of(final, 'ENTRYPOINT');
    expect(JSON.parse(content(entrypoint))).toEqual(['/usr/bin/tini', '--', 'clawray']);
    expect(runs(final)).toMatch(/apt-get install [^\n]*\btini\b/);
    expect(JSON.parse(content(of(final, 'CMD')[0]))).toEqual(['--help']);
  });

  it('checks its health with a real `clawray health` command that reaches the head’s port', () => {
    const [hc] = of(final, 'HEALTHCHECK');
    const raw = content(hc);
    const cmd = JSON.parse(raw.slice(raw.indexOf('CMD') + 3).trim()) as string[];
    expect(cmd[0]).toBe('clawray');
    const parsed = parseClawray(cmd.slice(1));
    expect(parsed).toMatchObject({ command: 'health', unknown: [] });
    // No address in the image: the head's default port, or the worker's from its env.
    expect(parsed.opts?.address).toBeUndefined();
    expect(
      of(final, 'ENV')
        .map(content)
        .some((e) => e.includes(HEALTH_ADDRESS_ENV)),
    ).toBe(false);
    expect(DEFAULT_HEAD_PORT).toBe(6390);
  });

  it('ships what package.json ships, built and pruned as the package scripts do', () => {
    const build = stages.find((s) => s.name === 'build')!;
    expect(runs(build)).toContain('npm ci');
    expect(runs(build)).toContain(`npx ${pkg.scripts.build.replace(/^npm run /, '')}`);
    expect(runs(build)).toContain('npm prune --omit=dev');
    for (const copy of of(build, 'COPY')) {
      const sources = copy
        .getArguments()
        .map((a) => a.getValue())
        .slice(0, -1);
      for (const s of sources) expect(existsSync(join(root, s)), s).toBe(true);
    }
    const finalCopies = of(final, 'COPY') as Copy[];
    const copied = finalCopies.map(content);
    for (const c of finalCopies) {
      const from = c.getFromFlag()?.getValue();
      expect(
        stages.some((s) => s.name === from),
        `COPY --from=${from}`,
      ).toBe(true);
    }
    // Negated entries ("!dist/.tsbuildinfo") leave something out; they ship nothing.
    const shipped = pkg.files.filter((f: string) => !f.startsWith('!')).map((f: string) => f.split('/')[0]);
    for (const top of [...new Set<string>(shipped), 'package.json', 'node_modules']) {
      expect(
        copied.some((c) => c.includes(`/src/${top}`)),
        top,
      ).toBe(true);
    }
    expect(runs(final)).toContain(`ln -s /opt/clawray/${pkg.bin.clawray} /usr/local/bin/clawray`);
    expect(runs(final)).toContain('ln -s /opt/clawray /node_modules/clawray');
  });

  it('has Chromium where the GUI track looks for it, and bubblewrap for the sandboxes', () => {
    const env = of(final, 'ENV').map(content).join('\n');
    expect(env).toContain(`CLAWRAY_CHROMIUM_PATH=${DEFAULT_CHROMIUM_PATH}`);
    expect(runs(final)).toMatch(/apt-get install [^\n]*\bbubblewrap\b/);
    if (rel.endsWith('.gpu')) {
      expect(existsSync(join(root, 'node_modules/playwright-core/cli.js'))).toBe(true);
      expect(runs(final)).toContain('node node_modules/playwright-core/cli.js install --with-deps');
      expect(runs(final)).toContain(`/usr/bin/chromium`);
    } else {
      // Debian, whose chromium package the GUI track uses.
      const image = final.image.replace(/\$\{(\w+)\}/g, (_, name: string) => argDefault(df, stages, name));
      expect(image).toMatch(/^node:\d+-bookworm-slim$/);
      expect(runs(final)).toMatch(/apt-get install [^\n]*\bchromium\b/);
    }
  });

  it('exposes the ports the manifests use and documents every build arg in the README', () => {
    const exposed = of(final, 'EXPOSE').flatMap((e) => content(e).split(/\s+/).map(Number));
    expect(exposed.sort()).toEqual([6390, 6391, 8080]);
    const readme = read('README.md');
    const names = [...df.getInitialARGs(), ...stages.flatMap((s) => of(s, 'ARG'))].map(
      (a) => (a.getArgumentsContent() ?? '').split('=')[0],
    );
    for (const name of new Set(names)) expect(readme, `README documents ${name}`).toContain(`\`${name}\``);
  });
});

describe('the GPU image', () => {
  const { df, stages, final } = parse('k8s/images/Dockerfile.gpu');
  const build = stages.find((s) => s.name === 'build')!;

  it('is based on a CUDA runtime image with cuDNN', () => {
    expect(argDefault(df, stages, 'CUDA_IMAGE')).toMatch(/^nvidia\/cuda:12\.[\d.]+-cudnn-runtime-ubuntu/);
  });

  it('fetches the CUDA provider of onnxruntime-node the way its installer documents', () => {
    const require = createRequire(join(root, 'package.json'));
    const metadata = require('onnxruntime-node/script/install-metadata.js') as {
      requirements: Record<string, string[]>;
      manifests: Record<string, Record<string, unknown>>;
    };
    const run = /ONNXRUNTIME_NODE_INSTALL=(\S+) node (\S+)[^\n]*test -f (\S+)/.exec(runs(build));
    expect(run, 'a RUN with ONNXRUNTIME_NODE_INSTALL=… node …install.js && test -f …').not.toBeNull();
    const [, flag, script, checked] = run!;
    expect(metadata.requirements['linux/x64']).toContain(flag);
    expect(existsSync(join(root, script))).toBe(true);
    const files = Object.keys(metadata.manifests[`linux/x64:${flag}`]).map((f) =>
      join('node_modules/onnxruntime-node/bin/napi-v6/linux/x64', f),
    );
    expect(files).toContain(checked);
  });

  it('installs @tensorflow/tfjs-node-gpu at the locked @tensorflow/tfjs version', () => {
    const lock = JSON.parse(read('package-lock.json'));
    const locked = lock.packages['node_modules/@tensorflow/tfjs'].version;
    expect(argDefault(df, stages, 'TFJS_NODE_GPU_VERSION')).toBe(locked);
    expect(runs(build)).toContain('npm install --no-save --omit=dev');
    expect(runs(build)).toMatch(/"@tensorflow\/tfjs-node-gpu@\$\{TFJS_NODE_GPU_VERSION\}"/);
    // libtensorflow 2.9 wants CUDA 11 and cuDNN 8 next to the base's CUDA 12 and cuDNN 9.
    expect(runs(final)).toMatch(/cuda-cudart-\$\{CUDA11_VERSION\}/);
    expect(runs(final)).toMatch(/libcudnn8=\$\{CUDNN8_VERSION\}/);
  });

  it("carries the trainers' WebGPU backend: tfjs-backend-webgpu and Dawn's linux-x64 binary", () => {
    expect(pkg.dependencies['@tensorflow/tfjs-backend-webgpu']).toBeDefined();
    // Optional: an install without it (or without Vulkan) trains on wasm and says why.
    expect(pkg.optionalDependencies.webgpu).toBeDefined();
    expect(runs(build)).toMatch(/test -f node_modules\/webgpu\/dist\/linux-x64\/dawn\.node/);
  });

  it('can reach the GPU through Vulkan (the WebGPU provider) when the CUDA provider cannot start', () => {
    // What made NVIDIA's Vulkan driver start on a GPU machine that lacked them.
    for (const pkg of ['libvulkan1', 'libglvnd0', 'libglx0', 'libegl1', 'libgl1', 'libopengl0', 'libgles2'])
      expect(runs(final)).toMatch(new RegExp(`\\b${pkg}\\b`));
    const env = of(final, 'ENV').map(content).join(' ');
    expect(env).toMatch(/NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics/);
  });
});

it('the build context leaves out what the images build themselves, and local secrets', () => {
  const ignored = read('.dockerignore').split('\n');
  for (const entry of ['node_modules', 'dist', '.git', 'k8s/base/secrets.env'])
    expect(ignored).toContain(entry);
});

/** The user ids of every clawray pod (head, workers, submit Job), rendered once. */
const manifestUids = {
  uids: undefined as number[] | undefined,
  check(uid: number) {
    if (!kubectlVersion()) throw new Error('kubectl is needed to render k8s/ (.ci/run installs it)');
    if (!this.uids) {
      const tree = new K8sTree({ token: 't', redisPassword: 'p', storeUrl: 'redis://x' });
      try {
        const objects = [...tree.render('overlays/gpu'), ...tree.render('jobs/submit')];
        this.uids = [
          find(objects, 'Deployment', 'clawray-head'),
          find(objects, 'Deployment', 'clawray-worker-trainer'),
          find(objects, 'Deployment', 'clawray-worker-rollout'),
          find(objects, 'Job', 'clawray-submit'),
        ].map((w) => w.spec.template.spec.securityContext.runAsUser);
      } finally {
        tree.close();
      }
    }
    expect(this.uids).toEqual(this.uids.map(() => uid));
  },
};
