// What an evaluation is asked and what it answers: the probe lines and the JSON that
// `merge-studio eval --json` writes and the studio's `eval-result` carries (issue 34 fixes its shape).

/** One line of a probe file (JSONL). */
export interface Probe {
  prompt: string;
  completion: string;
  /** The probe set it belongs to (default: the file's name without extension). */
  set: string;
}

export interface EvalModelRef {
  path: string;
  label: string;
}

export interface EvalExample {
  set: string;
  promptTokens: number;
  completionTokens: number;
  /** Per model: −Σ log p(completion token | everything before it), in nats. */
  nll: number[];
  /** Per model: completion positions whose argmax (ties: lowest id) is the completion token. */
  top1: number[];
  /** Per model: greedy ids from the prompt alone (empty when max-new-tokens is 0). */
  generated: number[][];
  /** Per model: those ids decoded with the model's tokenizer. */
  generatedText: string[];
}

export interface EvalSet {
  set: string;
  /** Completion tokens scored in the set (the same for every model). */
  tokens: number;
  /** Per model: Σ nll / tokens. */
  meanNll: number[];
  /** Per model: Σ top1 / tokens. */
  top1Rate: number[];
}

export interface EvalResult {
  models: EvalModelRef[];
  examples: EvalExample[];
  sets: EvalSet[];
}
