// A strict RFC 8259 JSON parser for untrusted headers, indexes and configs: it rejects duplicate
// keys at any depth (JSON.parse silently keeps the last one), lone surrogates and deep nesting,
// reports the line and column of every error, and lets the caller see each number's literal text.

export interface JsonParseOptions {
  /** Deepest nesting of arrays and objects accepted. Default 64. */
  maxDepth?: number;
  /** Maps each number literal (its exact source text) to the value stored. Default: Number(literal). */
  number?: (literal: string) => unknown;
}

export class JsonSyntaxError extends Error {
  override readonly name = 'JsonSyntaxError';
  /** Offset in UTF-16 code units from the start of the text. */
  readonly position: number;
  readonly line: number;
  readonly column: number;

  constructor(what: string, text: string, position: number) {
    const { line, column } = lineAndColumn(text, position);
    super(`${what} at line ${line}, column ${column}`);
    this.position = position;
    this.line = line;
    this.column = column;
  }
}

export const DEFAULT_MAX_DEPTH = 64;

/** Parses one JSON value surrounded by optional whitespace; objects come back as plain objects. */
export function parseJson(text: string, options: JsonParseOptions = {}): unknown {
  const parser = new Parser(text, options.maxDepth ?? DEFAULT_MAX_DEPTH, options.number ?? Number);
  return parser.parseDocument();
}

/** True when a number literal has neither a fraction nor an exponent. */
export function isIntegerLiteral(literal: string): boolean {
  return /^-?(?:0|[1-9][0-9]*)$/.test(literal);
}

const TAB = 0x09;
const LINE_FEED = 0x0a;
const RETURN = 0x0d;
const SPACE = 0x20;
const QUOTE = 0x22;
const PLUS = 0x2b;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const COLON = 0x3a;
const UPPER_E = 0x45;
const OPEN_BRACKET = 0x5b;
const BACKSLASH = 0x5c;
const CLOSE_BRACKET = 0x5d;
const LOWER_E = 0x65;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

const ESCAPES: Record<string, string> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

class Parser {
  private pos = 0;
  private depth = 0;

  constructor(
    private readonly text: string,
    private readonly maxDepth: number,
    private readonly number: (literal: string) => unknown,
  ) {}

  parseDocument(): unknown {
    this.skipWhitespace();
    const value = this.parseValue();
    this.skipWhitespace();
    if (this.pos < this.text.length) {
      const rest = this.text.slice(this.pos);
      const what = /^\0+$/.test(rest)
        ? `${rest.length} NUL byte(s) after the JSON value (padding must be spaces)`
        : `unexpected ${this.describeChar()} after the JSON value`;
      this.fail(what);
    }
    return value;
  }

  private parseValue(): unknown {
    const c = this.text.charCodeAt(this.pos);
    if (c === OPEN_BRACE) return this.parseObject();
    if (c === OPEN_BRACKET) return this.parseArray();
    if (c === QUOTE) return this.parseString();
    if (c === MINUS || (c >= ZERO && c <= NINE)) return this.parseNumber();
    if (this.text.startsWith('true', this.pos)) return this.literal(4, true);
    if (this.text.startsWith('false', this.pos)) return this.literal(5, false);
    if (this.text.startsWith('null', this.pos)) return this.literal(4, null);
    return this.fail(`unexpected ${this.describeChar()}`);
  }

  private literal<T>(length: number, value: T): T {
    this.pos += length;
    return value;
  }

  private enter(): void {
    this.depth += 1;
    if (this.depth > this.maxDepth) this.fail(`nesting deeper than ${this.maxDepth} levels`);
    this.pos += 1;
    this.skipWhitespace();
  }

  private parseObject(): Record<string, unknown> {
    this.enter();
    const object: Record<string, unknown> = {};
    if (this.text.charCodeAt(this.pos) === CLOSE_BRACE) {
      this.pos += 1;
      this.depth -= 1;
      return object;
    }
    for (;;) {
      const keyAt = this.pos;
      if (this.text.charCodeAt(this.pos) !== QUOTE)
        this.fail(`expected a string key, found ${this.describeChar()}`);
      const key = this.parseString();
      if (Object.hasOwn(object, key)) this.fail(`duplicate key ${JSON.stringify(key)}`, keyAt);
      this.skipWhitespace();
      this.expect(COLON, "':'");
      this.skipWhitespace();
      const value = this.parseValue();
      // Plain assignment is many times faster on a 300k-key header; only "__proto__" needs
      // defineProperty, as assigning it would replace the prototype instead.
      if (key === '__proto__')
        Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
      else object[key] = value;
      this.skipWhitespace();
      if (this.text.charCodeAt(this.pos) === COMMA) {
        this.pos += 1;
        this.skipWhitespace();
        continue;
      }
      this.expect(CLOSE_BRACE, "',' or '}'");
      this.depth -= 1;
      return object;
    }
  }

  private parseArray(): unknown[] {
    this.enter();
    const array: unknown[] = [];
    if (this.text.charCodeAt(this.pos) === CLOSE_BRACKET) {
      this.pos += 1;
      this.depth -= 1;
      return array;
    }
    for (;;) {
      array.push(this.parseValue());
      this.skipWhitespace();
      if (this.text.charCodeAt(this.pos) === COMMA) {
        this.pos += 1;
        this.skipWhitespace();
        continue;
      }
      this.expect(CLOSE_BRACKET, "',' or ']'");
      this.depth -= 1;
      return array;
    }
  }

  private parseString(): string {
    const text = this.text;
    let pos = this.pos + 1;
    let out = '';
    let runStart = pos;
    for (;;) {
      if (pos >= text.length) this.fail('unterminated string', pos);
      const c = text.charCodeAt(pos);
      if (c === QUOTE) break;
      if (c < SPACE) this.fail(`control character U+${hex4(c)} inside a string (escape it)`, pos);
      if (c === BACKSLASH) {
        out += text.slice(runStart, pos);
        const escape = text[pos + 1];
        if (escape === 'u') {
          const unit = this.hexUnit(pos + 2);
          pos += 6;
          if (unit >= 0xd800 && unit <= 0xdbff) {
            const low = text.startsWith('\\u', pos) ? this.hexUnit(pos + 2) : -1;
            if (low < 0xdc00 || low > 0xdfff) this.fail('lone surrogate escape', pos - 6);
            pos += 6;
            out += String.fromCharCode(unit, low);
          } else if (unit >= 0xdc00 && unit <= 0xdfff) {
            this.fail('lone surrogate escape', pos - 6);
          } else {
            out += String.fromCharCode(unit);
          }
        } else {
          const decoded = escape === undefined ? undefined : ESCAPES[escape];
          if (decoded === undefined) this.fail('invalid escape sequence', pos);
          out += decoded;
          pos += 2;
        }
        runStart = pos;
        continue;
      }
      if (c >= 0xd800 && c <= 0xdfff) {
        const low = text.charCodeAt(pos + 1);
        if (c > 0xdbff || !(low >= 0xdc00 && low <= 0xdfff)) this.fail('lone surrogate', pos);
        pos += 2;
        continue;
      }
      pos += 1;
    }
    out += text.slice(runStart, pos);
    this.pos = pos + 1;
    return out;
  }

  private hexUnit(at: number): number {
    const digits = this.text.slice(at, at + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(digits)) this.fail('invalid \\u escape', at - 2);
    return parseInt(digits, 16);
  }

  private parseNumber(): unknown {
    const text = this.text;
    const start = this.pos;
    let pos = start;
    if (text.charCodeAt(pos) === MINUS) pos += 1;
    const first = text.charCodeAt(pos);
    if (first === ZERO) pos += 1;
    else if (first > ZERO && first <= NINE) pos = this.skipDigits(pos);
    else this.fail('invalid number', start);
    if (text.charCodeAt(pos) === DOT) {
      const digits = this.skipDigits(pos + 1);
      if (digits === pos + 1) this.fail('invalid number: no digits after the decimal point', start);
      pos = digits;
    }
    const e = text.charCodeAt(pos);
    if (e === LOWER_E || e === UPPER_E) {
      pos += 1;
      const sign = text.charCodeAt(pos);
      if (sign === PLUS || sign === MINUS) pos += 1;
      const digits = this.skipDigits(pos);
      if (digits === pos) this.fail('invalid number: no digits in the exponent', start);
      pos = digits;
    }
    this.pos = pos;
    return this.number(text.slice(start, pos));
  }

  private skipDigits(pos: number): number {
    while (pos < this.text.length) {
      const c = this.text.charCodeAt(pos);
      if (c < ZERO || c > NINE) break;
      pos += 1;
    }
    return pos;
  }

  private skipWhitespace(): void {
    const text = this.text;
    let pos = this.pos;
    while (pos < text.length) {
      const c = text.charCodeAt(pos);
      if (c !== SPACE && c !== LINE_FEED && c !== RETURN && c !== TAB) break;
      pos += 1;
    }
    this.pos = pos;
  }

  private expect(char: number, what: string): void {
    if (this.text.charCodeAt(this.pos) !== char) this.fail(`expected ${what}, found ${this.describeChar()}`);
    this.pos += 1;
  }

  private describeChar(): string {
    if (this.pos >= this.text.length) return 'end of input';
    const c = this.text.charCodeAt(this.pos);
    return c >= 0x21 && c <= 0x7e ? `'${this.text[this.pos]}'` : `character U+${hex4(c)}`;
  }

  private fail(what: string, position = this.pos): never {
    throw new JsonSyntaxError(what, this.text, position);
  }
}

function hex4(code: number): string {
  return code.toString(16).toUpperCase().padStart(4, '0');
}

function lineAndColumn(text: string, position: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(position, text.length);
  for (let i = text.indexOf('\n'); i !== -1 && i < end; i = text.indexOf('\n', i + 1)) {
    line += 1;
    lineStart = i + 1;
  }
  return { line, column: position - lineStart + 1 };
}
