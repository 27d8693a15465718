/**
 * The browser pages' files: the page templates and scripts in `packages/core/assets/`, and uPlot's
 * script and stylesheet from its npm package, read once and kept, so the dashboard and the bench
 * report can inline them into one self-contained page.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const cache = new Map<string, string>();

/** A file of `packages/core/assets/` as text (the folder sits two levels above both src/util and dist/util). */
export function asset(name: string): string {
  let text = cache.get(name);
  if (text === undefined) {
    text = readFileSync(new URL(`../../assets/${name}`, import.meta.url), 'utf8');
    cache.set(name, text);
  }
  return text;
}

/**
 * uPlot's minified script (it defines the global `uPlot`) and its stylesheet, from the installed
 * package: charts without a build step or a CDN.
 */
export function uplot(): { js: string; css: string } {
  const key = '\0uplot';
  let js = cache.get(key);
  if (js === undefined) {
    const require = createRequire(import.meta.url);
    const dir = require.resolve('uplot/package.json').replace(/package\.json$/, '');
    js = readFileSync(`${dir}dist/uPlot.iife.min.js`, 'utf8');
    cache.set(key, js);
    cache.set(`${key}css`, readFileSync(`${dir}dist/uPlot.min.css`, 'utf8'));
  }
  return { js, css: cache.get(`${key}css`)! };
}

/**
 * `template` with each `{{NAME}}` replaced by `values[NAME]` (a name without a value is an error, so
 * a page never ships with a hole). Replacement text is taken literally (no `$&` patterns).
 */
export function fillTemplate(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{([A-Z_]+)\}\}/g, (_, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`page template has no value for {{${name}}}`);
    return v;
  });
}

/** `value` as JSON that can sit inside a `<script>` element: every `<` is escaped, so nothing in it can end the element. */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

/** Script text to inline in a `<script>` element; one that would end the element early is refused. */
export function scriptText(text: string, name: string): string {
  if (/<\/script|<!--/i.test(text)) throw new Error(`${name} contains "</script" or "<!--" and cannot be inlined`);
  return text;
}
