import { GpualertError } from '@gpualert/schema';
/** RFC 4180 CSV: quoted fields, doubled quotes, CRLF or LF, newlines inside quotes. */

/** Columns per row: CUR 2.0 has about 125, Azure's cost details about 90. */
export const MAX_CSV_COLUMNS = 1_000;
/** One field: descriptions and resource ids are short; a tag map a few KB. */
export const MAX_CSV_FIELD = 64 * 1024;

export interface CsvRow {
  /** The 1-based line the row starts on, for errors. */
  readonly line: number;
  readonly fields: string[];
  /** A row that is not CSV (text after a closing quote): its fields are not to be read; reading goes on at the next line. */
  readonly problem?: string;
}

export class CsvError extends GpualertError {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super('GA-CSV-INVALID', message);
  }
}

/**
 * Every row, the header first. A field or row past its bound, or an unclosed quote, throws `CsvError`
 * naming the line (what follows cannot be told apart from the field). Text after a closing quote
 * (`"a"b,…`) is a row with a `problem`: that row is one error, and reading goes on at the next line,
 * never treating the rest as a row of its own.
 */
export function* csvRows(text: string): Generator<CsvRow> {
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0; // a byte-order mark (Azure's exports carry one)
  let line = 1;
  while (i < text.length) {
    const start = line;
    const fields: string[] = [];
    let problem: string | undefined;
    for (;;) {
      let field = '';
      if (text[i] === '"') {
        i += 1;
        for (;;) {
          const quote = text.indexOf('"', i);
          if (quote < 0) throw new CsvError(start, 'a quoted field is never closed');
          const piece = text.slice(i, quote);
          for (let k = piece.indexOf('\n'); k >= 0; k = piece.indexOf('\n', k + 1)) line += 1;
          field += piece;
          i = quote + 1;
          if (text[i] === '"') {
            field += '"';
            i += 1;
            continue;
          }
          break;
        }
        if (i < text.length && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') {
          problem = `text after the closing quote of a field (column ${fields.length + 1}); a quote inside a quoted field is written twice ("")`;
          const end = text.indexOf('\n', i);
          i = end < 0 ? text.length : end;
          break;
        }
      } else {
        let j = i;
        while (j < text.length && text[j] !== ',' && text[j] !== '\n' && text[j] !== '\r') j += 1;
        field = text.slice(i, j);
        i = j;
      }
      if (field.length > MAX_CSV_FIELD) throw new CsvError(start, `a field of ${field.length} characters (at most ${MAX_CSV_FIELD})`);
      fields.push(field);
      if (fields.length > MAX_CSV_COLUMNS) throw new CsvError(start, `more than ${MAX_CSV_COLUMNS} columns`);
      if (text[i] === ',') {
        i += 1;
        continue;
      }
      break;
    }
    if (text[i] === '\r') i += 1;
    if (text[i] === '\n') i += 1;
    line += 1;
    if (problem !== undefined) {
      yield { line: start, fields: [], problem };
      continue;
    }
    if (fields.length === 1 && fields[0] === '') continue; // a blank line
    yield { line: start, fields };
  }
}

/** A header's columns by lower-cased name: `Quantity` and `quantity` are one column. */
export function columnIndex(header: readonly string[]): Map<string, number> {
  const index = new Map<string, number>();
  header.forEach((name, i) => {
    const key = name.trim().toLowerCase();
    if (!index.has(key)) index.set(key, i);
  });
  return index;
}
