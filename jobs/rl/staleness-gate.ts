/**
 * The bound on off-policyness (AReaL's staleness control): group `g` of a job (a prompt and
 * its samplesPerPrompt rollouts) may start only once the policy that will train on it is at
 * most `maxStaleness` versions newer than the one generating it. Step `s` trains groups
 * [s·B, (s+1)·B), so group g may start when version ≥ ⌊g / B⌋ − maxStaleness. With
 * maxStaleness 0 this is synchronous RL: a batch is rolled out only after the previous step's
 * weights are published.
 */
export class StalenessGate {
  private current: number;
  private nextGroup: number;
  private closed = false;
  /** Units handed out for batches that were not steps (train-loop's skipEmptySteps). */
  private refunded = 0;
  private waiters: Array<() => void> = [];
  /** Milliseconds callers have spent waiting in `acquire`. */
  waitedMs = 0;

  constructor(
    private readonly batchSize: number,
    private readonly maxStaleness: number,
    start: { version: number; group: number } = { version: 0, group: 0 },
  ) {
    this.current = start.version;
    this.nextGroup = start.group;
  }

  /** The version (in steps) rollouts are admitted against. */
  get version(): number {
    return this.current;
  }

  /** Groups handed out so far (where a resumed job continues from). */
  get groupsStarted(): number {
    return this.nextGroup;
  }

  /** The next group index, once the bound allows it; undefined once closed. */
  async acquire(): Promise<number | undefined> {
    const started = performance.now();
    while (!this.closed && !this.allows(this.nextGroup)) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    this.waitedMs += performance.now() - started;
    if (this.closed) return undefined;
    return this.nextGroup++;
  }

  /** A batch was not a step: a step's worth of units more may start at the current version. */
  refundStep(): void {
    this.refunded += this.batchSize;
    this.wake();
  }

  /** The policy version the rollouts now generate with. */
  advance(version: number): void {
    this.current = Math.max(this.current, version);
    this.wake();
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  private allows(group: number): boolean {
    return Math.floor((group - this.refunded) / this.batchSize) - this.maxStaleness <= this.current;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
