/** Steps that undo a setup (a stream's slots, watches, timers), run once, last first. */
export class Teardown {
  private steps: (() => void)[] = [];

  add(step: () => void): void {
    this.steps.push(step);
  }

  run(): void {
    const steps = this.steps.reverse();
    this.steps = [];
    for (const step of steps) step();
  }
}
