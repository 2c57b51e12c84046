import { describe, expect, it } from 'vitest';
import { cellText, escapeHtml, toCsv } from './export.ts';

describe('toCsv', () => {
  it('quotes fields with commas, quotes and line breaks, and ends every row with CRLF', () => {
    expect(
      toCsv([
        ['Tensor', 'Elements'],
        ['a,b', 'say "hi"'],
        ['line\nbreak', '12'],
      ]),
    ).toBe('Tensor,Elements\r\n"a,b","say ""hi"""\r\n"line\nbreak",12\r\n');
  });
});

describe('cellText', () => {
  it.each([
    ['  7,500,000 ', '7500000'],
    ['-1,024', '-1024'],
    ['12.5%', '12.5%'],
    ['1,234 / 56', '1,234 / 56'],
    ['layers.3\n  q', 'layers.3 q'],
  ])('%j → %j', (text, out) => expect(cellText(text)).toBe(out));
});

describe('escapeHtml', () => {
  it('escapes markup characters', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&#60;a href=&#34;x&#34;&#62;&#39;&#38;&#39;&#60;/a&#62;');
  });
});
