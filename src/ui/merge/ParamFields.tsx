// The widgets of a method's parameters, generic over PARAM_SPECS (src/methods/params.ts): the Merge
// step's recipe and the Evaluate step's candidate form both use them, each with its own test ids and
// onChange. A recipe's gradient or filter list is shown as it is, not as a number, until replaced.
import { useId, type ReactNode } from 'react';
import { agentValue, paramsRecord, yamlKeyOf } from '../../methods/defaults.ts';
import { specOf, type ParameterKey } from '../../methods/params.ts';
import { methodOf } from '../../methods/registry/index.ts';
import type { RecipeSettings, Setting } from '../../methods/recipe.ts';
import type { MethodParams } from '../../methods/types.ts';
import { settingNote, settingText } from '../../state/studio/recipe-import.ts';
import { idPart } from '../studio/common.tsx';

export type ParamChange = (key: ParameterKey, value: number | number[] | boolean | string) => void;

export interface ParamFieldsProps {
  params: MethodParams;
  /** The agents' labels, in merge order. */
  agents: string[];
  onChange: ParamChange;
  /** data-testid of a field: `${prefix}-${key}`, a per-agent one `${prefix}-${key}-${agent}`. */
  testIdPrefix: string;
  /** 'panel': each field's help under it; 'compact': as its title (the candidate form). */
  variant?: 'panel' | 'compact';
  /** A recipe's gradients and filters (mergekit keys), shown in place of the numbers they replace. */
  gradients?: RecipeSettings | null;
  /** Replaces a gradient (of agent t, or the global one for null) with the number the field holds. */
  onClearGradient?: (key: string, agent: number | null) => void;
}

interface FieldProps extends Omit<ParamFieldsProps, 'params' | 'agents'> {
  name: ParameterKey;
}

/** The field's wrapper, with its help shown under it or given as its title. */
function Help({ id, text, variant }: { id: string; text: string; variant: ParamFieldsProps['variant'] }) {
  return variant === 'compact' ? null : (
    <p id={`${id}-help`} className="studio-help">
      {text}
    </p>
  );
}

/** A gradient or filter list where a number would be, with the button that replaces it. */
function GradientValue({
  setting,
  testId,
  what,
  onClear,
}: {
  setting: Setting;
  testId: string;
  what: string;
  onClear?: () => void;
}): ReactNode {
  return (
    <span className="studio-gradient" data-testid={`${testId}-gradient`}>
      <code>{settingText(setting)}</code> <span className="studio-help">{settingNote(setting)}</span>
      {onClear && (
        <button
          type="button"
          className="button button--ghost studio-gradient__clear"
          data-testid={`${testId}-gradient-clear`}
          aria-label={`Use one value for ${what}`}
          onClick={onClear}
        >
          Use one value
        </button>
      )}
    </span>
  );
}

function NumberField({
  name,
  value,
  testIdPrefix,
  variant,
  onChange,
  gradient,
  onClearGradient,
}: FieldProps & { value: number; gradient?: Setting }) {
  const id = useId();
  const spec = specOf(name);
  const testId = `${testIdPrefix}-${name}`;
  const label = spec.label ?? name;
  return (
    <div className="studio-field" title={variant === 'compact' ? spec.help : undefined}>
      <label htmlFor={id}>{label}</label>
      {gradient !== undefined ? (
        <GradientValue
          setting={gradient}
          testId={testId}
          what={label}
          onClear={onClearGradient && (() => onClearGradient(yamlKeyOf(name), null))}
        />
      ) : (
        <input
          id={id}
          type="number"
          step={spec.step ?? 'any'}
          value={Number.isFinite(value) ? value : ''}
          aria-describedby={variant === 'compact' ? undefined : `${id}-help`}
          data-testid={testId}
          onChange={(event) => onChange(name, event.currentTarget.valueAsNumber)}
        />
      )}
      <Help id={id} text={spec.help} variant={variant} />
    </div>
  );
}

function ListField({
  name,
  values,
  agents,
  testIdPrefix,
  variant,
  onChange,
  gradients,
  onClearGradient,
}: FieldProps & { values: number[]; agents: string[] }) {
  const id = useId();
  const spec = specOf(name);
  const key = yamlKeyOf(name);
  const label = spec.label ?? name;
  return (
    <fieldset
      className="studio-field"
      title={variant === 'compact' ? spec.help : undefined}
      aria-describedby={variant === 'compact' ? undefined : `${id}-help`}
    >
      <legend>{label}</legend>
      <div className="studio-list">
        {agents.map((agent, t) => {
          const testId = `${testIdPrefix}-${name}-${idPart(agent)}`;
          // An agent's own setting wins over the global one (mergekit's order).
          const own = gradients?.models[t]?.[key];
          const gradient = own ?? gradients?.global[key];
          if (gradient !== undefined)
            return (
              <div key={agent} className="studio-list__item">
                <span>{agent}</span>
                <GradientValue
                  setting={gradient}
                  testId={testId}
                  what={`${agent}’s ${label}`}
                  onClear={onClearGradient && (() => onClearGradient(key, own !== undefined ? t : null))}
                />
              </div>
            );
          return (
            <label key={agent} className="studio-list__item">
              <span>{agent}</span>
              {
                <input
                  type="number"
                  step={spec.step ?? 'any'}
                  value={Number.isFinite(values[t] ?? NaN) ? values[t] : ''}
                  data-testid={testId}
                  onChange={(event) => {
                    const next = [...values];
                    next[t] = event.currentTarget.valueAsNumber;
                    onChange(name, next);
                  }}
                />
              }
            </label>
          );
        })}
      </div>
      <Help id={id} text={spec.help} variant={variant} />
    </fieldset>
  );
}

function CheckField({ name, checked, testIdPrefix, variant, onChange }: FieldProps & { checked: boolean }) {
  const spec = specOf(name);
  return (
    <div className="studio-field" title={variant === 'compact' ? spec.help : undefined}>
      <label className="studio-check">
        <input
          type="checkbox"
          checked={checked}
          data-testid={`${testIdPrefix}-${name}`}
          onChange={(event) => onChange(name, event.currentTarget.checked)}
        />{' '}
        {spec.label ?? name}
      </label>
      {variant !== 'compact' && <p className="studio-help">{spec.help}</p>}
    </div>
  );
}

function ChoiceField({ name, value, testIdPrefix, variant, onChange }: FieldProps & { value: string }) {
  const id = useId();
  const spec = specOf(name);
  return (
    <div className="studio-field" title={variant === 'compact' ? spec.help : undefined}>
      <label htmlFor={id}>{spec.label ?? name}</label>
      <select
        id={id}
        value={value}
        aria-describedby={variant === 'compact' ? undefined : `${id}-help`}
        data-testid={`${testIdPrefix}-${name}`}
        onChange={(event) => onChange(name, event.currentTarget.value)}
      >
        {(spec.values ?? []).map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
      <Help id={id} text={spec.help} variant={variant} />
    </div>
  );
}

/** One widget per parameter the method reads, as each spec's kind and scope say. */
export function ParamFields(props: ParamFieldsProps) {
  const { params, agents, gradients, ...field } = props;
  return (
    <>
      {methodOf(params.method).parameters.map((name) => {
        const spec = specOf(name);
        const value = paramsRecord(params)[name] ?? spec.default;
        if (spec.scope === 'agent')
          return (
            <ListField
              key={name}
              {...field}
              name={name}
              agents={agents}
              gradients={gradients}
              values={agents.map((_, t) => agentValue(params, name, t))}
            />
          );
        if (spec.kind === 'boolean')
          return <CheckField key={name} {...field} name={name} checked={Boolean(value)} />;
        if (spec.kind === 'enum')
          return <ChoiceField key={name} {...field} name={name} value={String(value)} />;
        return (
          <NumberField
            key={name}
            {...field}
            name={name}
            value={value as number}
            gradient={spec.perTensor ? gradients?.global[yamlKeyOf(name)] : undefined}
          />
        );
      })}
    </>
  );
}
