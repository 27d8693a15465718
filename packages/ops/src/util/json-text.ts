/**
 * JSON a user wrote (a plan, a fitted state), parsed with errors they can act on.
 *
 * Why: JSON.parse's messages give a byte position ("at position 54") or none at all
 * ("Unexpected token 'P', "PAR1"... is not valid JSON"), and refuse a byte-order mark that an
 * editor may have saved and the terminal does not show. Here a leading BOM is dropped, and a
 * failure names the line and column of the first mistake and what was expected there.
 *
 * JSON.parse still does the parsing, so what is accepted is exactly JSON. Only when it fails is
 * the text run through jsonc-parser (Microsoft's, the VS Code JSON scanner) to find the first
 * mistake. jsonc-parser is loaded then, not before: loading it costs ~30–50 ms, which a run (and
 * every worker thread that loads this package) would otherwise pay at start-up.
 */
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { PlanError } from '../errors.js';

type JsoncParser = typeof import('jsonc-parser');

let jsonc: JsoncParser | undefined;

/** The error-path scanner, loaded on first use. */
function scanner(): JsoncParser {
  jsonc ??= createRequire(import.meta.url)('jsonc-parser') as JsoncParser;
  return jsonc;
}

/** What jsonc-parser's error codes mean, as a user reads them. */
const EXPECTED: Readonly<Record<string, string>> = {
  InvalidSymbol: 'unexpected text',
  InvalidNumberFormat: 'a malformed number',
  PropertyNameExpected: 'expected a property name in double quotes (a trailing comma?)',
  ValueExpected: 'expected a value (a trailing comma?)',
  ColonExpected: "expected ':' after a property name",
  CommaExpected: "expected ',' or a closing bracket",
  CloseBraceExpected: "expected '}'",
  CloseBracketExpected: "expected ']'",
  EndOfFileExpected: 'more text after the end of the document',
  InvalidCommentToken: 'a comment (JSON has none)',
  UnexpectedEndOfComment: 'a comment (JSON has none)',
  UnexpectedEndOfString: 'a string not closed on its line',
  UnexpectedEndOfNumber: 'a malformed number',
  InvalidUnicode: 'a malformed \\u escape',
  InvalidEscapeCharacter: 'an invalid escape in a string',
  InvalidCharacter: 'a control character inside a string',
};

/**
 * Parses `text` as JSON; a failure throws a PlanError `<what> is not valid JSON at line L, column C: <why>`.
 * `what` names the document ("plan plan.json", "fit state state.json").
 */
export function parseJsonText(text: string, what: string): unknown {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  try {
    return JSON.parse(body);
  } catch {
    throw new PlanError(`${what} ${jsonProblem(body)}`);
  }
}

/**
 * Reads and parses the JSON file at `path`; `what` names it in errors ("plan file", "fit state").
 * A file that cannot be read is named with the reason in words (no such file, a directory,
 * permission denied), not Node's error code.
 */
export function readJsonFile(path: string, what: string): unknown {
  return parseJsonText(readTextFile(path, what), `${what} ${path}`);
}

/** The text of a file a user named, or a PlanError `<what> <path>: <reason>`. */
function readTextFile(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new PlanError(`cannot read ${what} ${path}: ${unreadable(e as NodeJS.ErrnoException)}`);
  }
}

function unreadable(e: NodeJS.ErrnoException): string {
  switch (e.code) {
    case 'ENOENT':
      return 'no such file';
    case 'EISDIR':
      return 'it is a directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    default:
      return e.code ?? e.message;
  }
}

/** Why `text`, which JSON.parse refused, is not JSON: where, and what was expected there. */
function jsonProblem(text: string): string {
  if (text.trim() === '') return 'is empty';
  if (text.startsWith('PAR1')) return 'is a Parquet file, not JSON';
  if (text.includes('\u0000')) return 'is binary, not JSON';
  const { parse, printParseErrorCode } = scanner();
  const errors: import('jsonc-parser').ParseError[] = [];
  parse(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const first = errors[0];
  // JSON.parse refuses a few texts the scanner takes (a lone surrogate in a string, say).
  if (first === undefined) return 'is not valid JSON';
  const code = printParseErrorCode(first.error);
  const found = text.slice(first.offset, first.offset + Math.min(first.length, 20)).replace(/\s+/g, ' ');
  const expected = EXPECTED[code] ?? code;
  // A document cut short: the scanner's complaint is about the end of the text.
  const why = first.offset >= text.trimEnd().length ? `the text ends early (${expected})` : expected;
  const quoted = code === 'InvalidSymbol' && found !== '' ? ` ${JSON.stringify(found)}` : '';
  return `is not valid JSON at ${lineColumn(text, first.offset)}: ${why}${quoted}`;
}

/** "line L, column C" (both from 1) of character `offset` of `text`. */
function lineColumn(text: string, offset: number): string {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return `line ${line}, column ${offset - start + 1}`;
}
