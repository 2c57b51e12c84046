// The stripe pattern that marks shared changes, so shared and unique differ without colour.
export const hatchId = (prefix: string, agent: number): string => `${prefix}-hatch-${agent}`;

export function HatchPatterns({ prefix, colors }: { prefix: string; colors: readonly string[] }) {
  return (
    <defs>
      {colors.map((color, t) => (
        <pattern
          key={color + String(t)}
          id={hatchId(prefix, t)}
          width="6"
          height="6"
          patternUnits="userSpaceOnUse"
          patternTransform="rotate(45)"
        >
          <rect width="6" height="6" fill="#ffffff" />
          <rect width="3" height="6" fill={color} />
        </pattern>
      ))}
    </defs>
  );
}
