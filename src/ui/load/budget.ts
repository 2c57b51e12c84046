// The memory budget in a sentence, for the engine card and the merge panel's advice.
import { MEMORY_BUDGETS } from '../../worker/protocol.ts';
import { formatBytes } from '../format.ts';

/** The smallest budget the engine card offers of at least `bytes`, in words for a sentence. */
export function budgetAdvice(bytes: number): string {
  const offered = MEMORY_BUDGETS.find((b) => b >= bytes);
  return offered
    ? `a memory budget of ${formatBytes(offered)}`
    : `a memory budget of ${formatBytes(bytes)} (more than the studio offers; the command line takes any)`;
}
