// What a LoRA adapter agent is (SPEC.md "LoRA / PEFT adapters as agents"): its rank, alpha and target
// modules, and the base it was trained on beside the base loaded (a quantised copy's name is said,
// not refused), as the worker found them.
import type { PeftAdapter } from '../../format/peft.ts';
import { useStudio } from '../../state/store.ts';

export function LoraFacts({ adapter, slot, testId }: { adapter: PeftAdapter; slot: string; testId: string }) {
  const notes = useStudio((s) => s.studio.check.result?.adapterNotes[slot]);
  const base = useStudio((s) => s.studio.models.find((m) => m.role === 'base' && m.status === 'ready'));
  const facts = [
    adapter.rank !== null ? `rank ${adapter.rank}` : null,
    adapter.alpha !== null ? `alpha ${adapter.alpha}` : null,
    adapter.targets.length > 0 ? `targets ${adapter.targets.join(', ')}` : null,
  ].filter((f): f is string => f !== null);
  let trained: string | null = null;
  if (notes && notes.length > 0) trained = notes.join(' ');
  else if (adapter.baseModel && notes && base)
    trained = `Trained on ${adapter.baseModel}, the base loaded as ${base.label}.`;
  else if (adapter.baseModel) trained = `Trained on ${adapter.baseModel}.`;
  return (
    <div className="studio-lora" data-testid={`${testId}-lora`}>
      <p>
        <strong>LoRA adapter</strong>
        {facts.length > 0 ? ` (${facts.join('; ')})` : ''}: τ = s·B·A, made over the base as it is read.
      </p>
      {trained && (
        <p className="muted" data-testid={`${testId}-lora-base`}>
          {trained}
        </p>
      )}
    </div>
  );
}
