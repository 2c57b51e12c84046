// PEFT adapters (LoRA and other parameter-efficient types) are not full checkpoints: they hold small
// update matrices named after the modules they adapt. Recognised by adapter_config.json or by their
// tensor names (lora_A / lora_B, PEFT's base_model.model. prefix), so the studio can say what they
// are and what to load instead, rather than report a difference per tensor.

export interface PeftAdapter {
  /** PEFT's peft_type (LORA, FINEGATES, …), or LORA when only the tensor names told. */
  type: string;
  /** LoRA rank (config r, else the rows of a lora_A matrix); null where neither says. */
  rank: number | null;
  alpha: number | null;
  targets: string[];
  /** base_model_name_or_path of the config. */
  baseModel: string | null;
  /** Tensors named as LoRA factors (lora_A, lora_B, lora_embedding_A/B). */
  loraTensors: number;
  /** Where it was recognised: 'adapter_config.json' or a weights file name. */
  evidence: string;
}

export const ADAPTER_CONFIG = 'adapter_config.json';

const LORA_FACTOR = /(?:^|\.)lora_(?:embedding_)?[AB](?:\.|$)/;
const LORA_A = /(?:^|\.)lora_A(?:\.|$)/;
const PEFT_PREFIX = 'base_model.model.';

export function isLoraTensor(name: string): boolean {
  return LORA_FACTOR.test(name);
}

const str = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
const num = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;

function targetsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return [];
}

/**
 * The adapter that a config text and/or tensor names describe, or null when neither looks like one.
 * `tensors` may be empty (the weights could not be opened); an unreadable config still counts, as
 * its name alone says what the folder is.
 */
export function detectAdapter(
  config: { text: string } | null,
  tensors: readonly { name: string; shape: readonly number[] }[],
  weightsFile?: string,
): PeftAdapter | null {
  const lora = tensors.filter((t) => isLoraTensor(t.name));
  const prefixed = tensors.length > 0 && tensors.every((t) => t.name.startsWith(PEFT_PREFIX));
  if (!config && lora.length === 0 && !prefixed) return null;
  let doc: Record<string, unknown> = {};
  if (config) {
    try {
      const parsed: unknown = JSON.parse(config.text);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
        doc = parsed as Record<string, unknown>;
    } catch {
      // Still an adapter folder: the fields just stay unknown.
    }
  }
  const firstA = lora.find((t) => LORA_A.test(t.name));
  return {
    type: str(doc.peft_type) ?? (lora.length > 0 ? 'LORA' : 'PEFT'),
    rank: num(doc.r) ?? (firstA?.shape[0] !== undefined ? firstA.shape[0] : null),
    alpha: num(doc.lora_alpha),
    targets: targetsOf(doc.target_modules),
    baseModel: str(doc.base_model_name_or_path),
    loraTensors: lora.length,
    evidence: config ? ADAPTER_CONFIG : (weightsFile ?? 'the tensor names'),
  };
}

/**
 * One message: what the folder is and what to load instead. A LoRA adapter is an agent (over the
 * base), never a base; other adapter types are refused as agents too. `cause`: why a LoRA agent's
 * files could not be opened.
 */
export function adapterMessage(
  adapter: PeftAdapter,
  label: string,
  role: 'base' | 'agent' = 'agent',
  cause?: string,
): string {
  const facts = [
    adapter.rank !== null ? `rank ${adapter.rank}` : null,
    adapter.alpha !== null ? `alpha ${adapter.alpha}` : null,
    adapter.targets.length > 0 ? `targets ${adapter.targets.join(', ')}` : null,
    adapter.baseModel ? `base model ${adapter.baseModel}` : null,
  ].filter((f): f is string => f !== null);
  const base = adapter.baseModel ?? 'the model it was trained on';
  const what = `${label} is a PEFT ${adapter.type} adapter${facts.length > 0 ? ` (${facts.join('; ')})` : ''}, recognised by ${adapter.evidence}`;
  if (adapter.type === 'LORA' && role === 'base')
    return (
      `${what}: it holds only the adapter's small update tensors, so it cannot be the base. Load ${base} ` +
      'as the base and the adapter as an agent: its τ is s·B·A over that base.'
    );
  if (adapter.type === 'LORA')
    return (
      `${what}: a LoRA adapter merges as an agent from one adapter_config.json beside one ` +
      `adapter_model.safetensors${cause ? `, and ${cause}` : ''}. Load ${base} as the base and the ` +
      "adapter's folder as an agent."
    );
  return (
    `${what}: it holds only the adapter's small update tensors, not a full ` +
    `checkpoint, and only LoRA adapters merge as agents. Load ${base} as the base, and as each agent ` +
    `that base with the adapter merged in (PEFT: merge_and_unload(), then save_pretrained()).`
  );
}
