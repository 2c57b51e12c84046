// Non-finite values (SPEC.md "Non-finite values"): the error a merge raises and the tally behind it.

/**
 * A tensor that cannot be merged (SPEC.md "Non-finite values"): elements whose bits differ between
 * the models and where one holds NaN or ±Inf, or finite merged values that overflow to ±Inf in the
 * output dtype. Counts are over the whole tensor; perModel is indexed base first.
 */
export class NonFiniteError extends Error {
  override readonly name = 'NonFiniteError';
  constructor(
    readonly nonFinite: number,
    readonly perModel: readonly number[],
    readonly overflow: number,
  ) {
    super(
      nonFinite > 0
        ? `${plural(nonFinite, 'element')} hold NaN or ±Inf where the models differ (` +
            perModel
              .map((count, m) => (count > 0 ? `${m === 0 ? 'base' : `agent ${m}`}: ${count}` : ''))
              .filter(Boolean)
              .join(', ') +
            ')'
        : `${plural(overflow, 'merged value')} overflow to ±Inf in the output dtype`,
    );
  }
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** Counts of a tensor's bad elements, summed over its windows by the engines. */
export class NonFiniteTally {
  nonFinite = 0;
  overflow = 0;
  readonly perModel: number[];
  constructor(models: number) {
    this.perModel = new Array<number>(models).fill(0);
  }
  get bad(): boolean {
    return this.nonFinite > 0 || this.overflow > 0;
  }
  add(nonFinite: number, overflow: number, perModel: ArrayLike<number>): void {
    this.nonFinite += nonFinite;
    this.overflow += overflow;
    for (let m = 0; m < this.perModel.length; m++) this.perModel[m]! += perModel[m] ?? 0;
  }
  throwIfBad(): void {
    if (this.bad) throw new NonFiniteError(this.nonFinite, this.perModel, this.overflow);
  }
}

/** The NonFiniteError behind an engine or driver error, if that is what it is. */
export function nonFiniteCause(error: unknown): NonFiniteError | undefined {
  for (let e: unknown = error; e instanceof Error; e = e.cause) if (e instanceof NonFiniteError) return e;
  return undefined;
}
