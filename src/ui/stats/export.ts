// Taking the statistics away: tables as CSV, figures (SVG charts and their HTML legends) as PNG,
// and a self-contained HTML report; all built in the page, nothing leaves it but a download.

/** RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled. */
export function toCsv(rows: readonly (readonly string[])[]): string {
  const field = (value: string): string =>
    /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
  return rows.map((row) => row.map(field).join(',')).join('\r\n') + '\r\n';
}

/** A table cell as data: thousands separators dropped from integers ("1,234" → "1234"). */
export function cellText(text: string): string {
  const trimmed = text.replace(/\s+/g, ' ').trim();
  return /^-?\d{1,3}(?:,\d{3})+$/.test(trimmed) ? trimmed.replace(/,/g, '') : trimmed;
}

/** Every row of a table (header, body, footer) as text cells. */
export function tableRows(table: HTMLTableElement): string[][] {
  return [...table.rows].map((row) => [...row.cells].map((cell) => cellText(cell.textContent ?? '')));
}

export function downloadBlob(blob: Blob, file: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = file;
  link.click();
  // The click has started the download; the URL is only needed until then.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

/** The ink of exported figures: they are drawn on white whatever the page's colour scheme. */
export const EXPORT_INK = '#1b2430';

/**
 * An SVG as standalone markup: namespaces, its drawn size, and the page font it inherits. Its text is
 * drawn in currentColor (the page's text colour, light in dark mode); standalone, it takes the
 * export's dark ink, as the white background of a PNG or a report needs.
 */
export function svgMarkup(svg: SVGSVGElement): string {
  const clone = svg.cloneNode(true) as SVGSVGElement;
  clone.style.color = EXPORT_INK;
  const box = svg.getBoundingClientRect();
  clone.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  clone.setAttribute('width', String(Math.ceil(box.width)));
  clone.setAttribute('height', String(Math.ceil(box.height)));
  clone.style.fontFamily = FONT;
  clone.style.fontSize = getComputedStyle(svg).fontSize;
  return new XMLSerializer().serializeToString(clone);
}

async function svgImage(svg: SVGSVGElement): Promise<HTMLImageElement> {
  const url = URL.createObjectURL(new Blob([svgMarkup(svg)], { type: 'image/svg+xml' }));
  try {
    const image = new Image();
    image.src = url;
    await image.decode();
    return image;
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** Text nodes outside the SVGs (titles, recharts' HTML legends) with where and how they are drawn. */
function htmlTexts(root: HTMLElement): { element: HTMLElement; text: string }[] {
  const out: { element: HTMLElement; text: string }[] = [];
  const walk = (element: Element): void => {
    if (element instanceof SVGElement || element.closest('[data-export-skip]')) return;
    const own = [...element.childNodes]
      .filter((n) => n.nodeType === Node.TEXT_NODE)
      .map((n) => n.textContent ?? '')
      .join('')
      .trim();
    if (own !== '' && element instanceof HTMLElement) out.push({ element, text: own });
    for (const child of element.children) walk(child);
  };
  walk(root);
  return out;
}

/** WCAG relative luminance of a computed `rgb(…)`/`rgba(…)` colour (0 black … 1 white; 0 if unparsed). */
export function luminance(color: string): number {
  const match = /rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)/.exec(color);
  if (!match) return 0;
  const [r, g, b] = [match[1], match[2], match[3]].map((v) => {
    const c = Number(v) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/**
 * A figure as PNG at twice its size: every SVG drawn where it sits, the HTML text around them
 * (caption, legend) drawn in its computed font and colour, on white.
 */
export async function figurePng(figure: HTMLElement): Promise<Blob> {
  const box = figure.getBoundingClientRect();
  const scale = 2;
  const canvas = document.createElement('canvas');
  canvas.width = Math.ceil(box.width * scale);
  canvas.height = Math.ceil(box.height * scale);
  const context = canvas.getContext('2d');
  if (!context) throw new Error('This browser cannot draw a canvas, so the figure cannot be saved as PNG.');
  context.scale(scale, scale);
  context.fillStyle = '#ffffff';
  context.fillRect(0, 0, box.width, box.height);
  for (const svg of figure.querySelectorAll('svg')) {
    if (svg.parentElement?.closest('svg') || svg.closest('[data-export-skip]')) continue;
    const at = svg.getBoundingClientRect();
    if (at.width === 0 || at.height === 0) continue;
    context.drawImage(await svgImage(svg), at.left - box.left, at.top - box.top, at.width, at.height);
  }
  context.textBaseline = 'middle';
  for (const { element, text } of htmlTexts(figure)) {
    const style = getComputedStyle(element);
    const at = element.getBoundingClientRect();
    context.font = `${style.fontWeight} ${style.fontSize} ${FONT}`;
    // Light text (the dark scheme's) would vanish on the PNG's white: it takes the export's ink.
    context.fillStyle = luminance(style.color) > 0.4 ? EXPORT_INK : style.color;
    context.fillText(text, at.left - box.left, at.top - box.top + at.height / 2, at.width + 4);
  }
  return new Promise((resolve, reject) =>
    canvas.toBlob(
      (blob) => (blob ? resolve(blob) : reject(new Error('The PNG could not be encoded.'))),
      'image/png',
    ),
  );
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const REPORT_CSS = `body{font-family:${FONT};color:#1b2430;margin:24px;max-width:1400px}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:28px}table{border-collapse:collapse;font-size:.85rem;
font-variant-numeric:tabular-nums;margin:8px 0}th,td{border-bottom:1px solid #d9dee6;padding:3px 8px;
text-align:right;white-space:nowrap}th[scope=row],thead th:first-child{text-align:left}caption{text-align:left;
color:#5b6675}figure{margin:16px 0}svg{max-width:100%;height:auto}.muted{color:#5b6675}`;

/**
 * The statistics section of the page as one HTML file: its tables and SVG figures copied as they are
 * drawn (controls become plain text), inline CSS, no scripts, nothing fetched.
 */
export function reportHtml(title: string, facts: string, parts: readonly HTMLElement[]): string {
  const body = parts
    .map((part) => {
      const clone = part.cloneNode(true) as HTMLElement;
      clone.querySelectorAll('[data-export-skip], script').forEach((e) => e.remove());
      clone.querySelectorAll('button, select, input').forEach((control) => {
        const text =
          control instanceof HTMLSelectElement
            ? (control.selectedOptions[0]?.text ?? '')
            : (control.textContent ?? '');
        control.replaceWith(document.createTextNode(text));
      });
      const svgs = part.querySelectorAll('svg');
      clone.querySelectorAll('svg').forEach((svg, i) => {
        const source = svgs[i];
        const holder = document.createElement('span');
        holder.innerHTML = source ? svgMarkup(source) : '';
        svg.replaceWith(...holder.childNodes);
      });
      return clone.outerHTML;
    })
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>${escapeHtml(title)}</title><style>${REPORT_CSS}</style></head>
<body><h1>${escapeHtml(title)}</h1><p class="muted">${escapeHtml(facts)}</p>
${body}
</body></html>
`;
}
