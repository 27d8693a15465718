/**
 * Input schemas without data: a plan printed by `sluice plan --preset` is typed from its preset's
 * columns, so `sluice explain` can run without a Parquet file.
 */
import { loadPlan, PlanError, typeCheckPlan, type ColumnType, type Plan, type TypedPlan } from '@sluice/ops';
import { arrowColumnType } from '../reader/arrow.js';
import { presetArrowSchema } from './generate.js';
import { PRESETS } from './presets.js';

/**
 * The input schema a plan needs when no data is given: the schema of the first preset whose
 * columns cover every input the plan reads (plans printed by `sluice plan --preset`).
 *
 * @example
 * presetSchemaFor(loadPlan(getPreset('rm1').defaultPlan()))?.get('C1'); // { kind: 'utf8' }
 */
export function presetSchemaFor(plan: Plan): Map<string, ColumnType> | null {
  const need = [...new Set([...plan.features.map((f) => f.input), ...(plan.label ? [plan.label] : [])])];
  for (const p of Object.values(PRESETS)) {
    const schema = new Map<string, ColumnType>();
    for (const f of presetArrowSchema(p).fields) {
      const t = arrowColumnType(f.type);
      if (t) schema.set(f.name, t);
    }
    if (need.every((c) => schema.has(c))) return schema;
  }
  return null;
}

/**
 * Type-checks a plan for explain, from given or preset schema.
 *
 * @example
 * const typed = typedForExplain(loadPlan(getPreset('rap-plan3').defaultPlan()));
 */
export function typedForExplain(plan: Plan | TypedPlan, schema?: ReadonlyMap<string, ColumnType>): TypedPlan {
  if ('columns' in plan) return plan;
  const s = schema ?? presetSchemaFor(plan);
  if (s === null)
    throw new PlanError(
      "explain needs the input types: pass --input (a Parquet file with the plan's columns), or use a plan of a preset (`sluice plan --preset NAME`)",
    );
  return typeCheckPlan(loadPlan(plan), s);
}
