// What a merge parameter's spec says (PARAM_SPECS in params.ts is the table of them), apart from the
// table, so that an implementation declaring its own parameters (a sparsifier's) needs no import of it.

/** A value of one agent (scope `agent`: a list, one per agent) or of the whole merge (`global`). */
export type ParamScope = 'global' | 'agent';
export type ParamKind = 'number' | 'integer' | 'boolean' | 'enum';
export type ParamScalar = number | boolean | string;

/** Accepted numbers: [min, max] with either end open or absent; `text` says it in messages. */
export interface ParamRange {
  min?: number;
  max?: number;
  minOpen?: boolean;
  maxOpen?: boolean;
  /** How messages write the range where the numbers alone read badly (2^32). */
  text?: string;
}

export interface ParamSpec {
  kind: ParamKind;
  scope: ParamScope;
  /** An enum's values, in the order help and messages list them. */
  values?: readonly string[];
  /**
   * May be absent from a MethodParams: absent means `default`. A method's defaults (descriptor
   * `defaults`) that name it fill it in; the others leave it out.
   */
  optional?: boolean;
  /** The value where nothing says (a method's descriptor `defaults` may override it). */
  default: ParamScalar;
  /** Checked on every value from the CLI, a recipe (each number of a gradient) and the studio. */
  range?: ParamRange;
  /** One line for the CLI help, the studio and the model card. */
  help: string;
  /** The studio's and Compare's name for it where not the key (λ, ε). */
  label?: string;
  /** Set by the merge itself (per tensor): no flag, no recipe key, no widget, not saved. */
  internal?: boolean;
  mergekit?: {
    /** Its key in mergekit's YAML: under `parameters:` (global) or a model's `parameters:` (agent). */
    key: string;
    /** mergekit's default where it differs from ours (density: mergekit keeps everything). */
    default?: ParamScalar;
    /**
     * mergekit's base schema: every method's recipe may carry it (a method that does not read it
     * notes that it is unused). Without it, only the methods that read it accept it.
     */
    anyMethod?: boolean;
    /** Not written into an exported recipe (mergekit has no such parameter). */
    write?: false;
    /** A top-level key of the recipe that sets it too (mergekit's `random_seed`). */
    topLevel?: string;
    /** mergekit refuses a model without it. */
    required?: boolean;
    /** The recipe's value, where it is not the value itself. */
    toYaml?: (value: ParamScalar | undefined) => ParamScalar;
    /** The value of a recipe's setting, or undefined where it is none of the accepted forms. */
    fromYaml?: (value: ParamScalar) => ParamScalar | undefined;
    /** The accepted forms, for the error that refuses another. */
    forms?: string;
  };
  /** Its command-line flag (without --): a boolean gets --flag and --no-flag. Absent: no flag. */
  flag?: string;
  /** A recipe's gradient or filter may set it per tensor (resolved in resolve.ts). */
  perTensor?: boolean;
  /** Its column in the model card's per-tensor table. */
  card?: string;
  /** Kept when the studio switches method (the others take the new method's defaults). */
  keepOnMethodChange?: boolean;
  /** The studio's number input: its step ('any' where absent). */
  step?: number | 'any';
}

/** How a random drop rescales the entries it keeps (see PARAM_SPECS.rescale). */
export const RESCALE_RULES = ['density', 'l1', 'none'] as const;
export type DareRescale = (typeof RESCALE_RULES)[number];
