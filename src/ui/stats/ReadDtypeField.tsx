// The "compare at" control: the read precision D every model's values are rounded to before τ, the
// statistics and the merge (SPEC.md "Inputs stored in other precisions"; the CLI's --read-dtype), and
// what the set stores, so the default's meaning is said where it is chosen.
import { useId } from 'react';
import type { FloatDtype } from '../../format/dtype.ts';
import type { ReadDtype } from '../../format/precision.ts';
import type { ReadPrecisionFacts } from '../../driver/read-precision.ts';
import { studioStore, useStudio } from '../../state/store.ts';

const WORD: Record<FloatDtype, string> = { BF16: 'bf16', F16: 'f16', F32: 'f32' };

const CHOICES: { value: ReadDtype; text: string }[] = [
  { value: 'BF16', text: 'bf16' },
  { value: 'F16', text: 'f16' },
  { value: 'F32', text: 'f32' },
  { value: 'stored', text: 'stored precision' },
];

/** What the default reads at for this set: stored for a uniform one, else the base's dtype per tensor. */
export function defaultReadText(facts: ReadPrecisionFacts | undefined): string {
  if (!facts || facts.mixedTensors === 0) return 'stored precision';
  const base = facts.modelDtypes[0] ?? [];
  return `the base’s dtype (${base.map((d) => WORD[d]).join(', ') || 'as stored'})`;
}

/** The read precision as a sentence's words: "bf16", or the default's meaning. */
export function readDtypeText(readDtype: ReadDtype | null, facts: ReadPrecisionFacts | undefined): string {
  if (readDtype === null) return defaultReadText(facts);
  return readDtype === 'stored' ? 'stored precision' : WORD[readDtype];
}

export function ReadDtypeField() {
  const id = useId();
  const readDtype = useStudio((s) => s.studio.readDtype);
  const facts = useStudio((s) => s.studio.check.result?.precision);
  const models = useStudio((s) => s.studio.models);
  const labels = models.map((m) => m.label);
  const stored =
    facts && facts.mixedTensors > 0
      ? facts.modelDtypes
          .map((dtypes, m) => `${labels[m] ?? `model ${m}`} ${dtypes.map((d) => WORD[d]).join('+')}`)
          .join(', ')
      : null;
  return (
    <div className="studio-field stats-read-dtype">
      <label htmlFor={id}>Compare at</label>
      <select
        id={id}
        value={readDtype ?? ''}
        data-testid="read-dtype"
        aria-describedby={`${id}-help`}
        onChange={(event) =>
          void studioStore.getState().setReadDtype((event.currentTarget.value || null) as ReadDtype | null)
        }
      >
        <option value="">Default: {defaultReadText(facts)}</option>
        {CHOICES.map((c) => (
          <option key={c.value} value={c.value}>
            {c.text}
          </option>
        ))}
      </select>
      <p id={`${id}-help`} className="studio-help" data-testid="read-dtype-help">
        {stored ? `Stored in more than one dtype (${stored}; ${facts?.mixedTensors} tensors differ): ` : ''}
        every value is rounded to this precision as it is read, for the statistics and the merge.
      </p>
    </div>
  );
}
