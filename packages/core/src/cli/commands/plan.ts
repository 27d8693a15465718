/** `sluice plan`: print a preset's default plan as JSON. */
import { getPreset, type Preset } from '../../gen/presets.js';
import { need, UsageError, type Values } from '../args.js';

/** The preset called `name`; an unknown name is a usage error listing the valid ones. */
export function preset(name: string): Preset {
  try {
    return getPreset(name);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

export function cmdPlan(values: Values): number {
  const p = preset(need(values, 'preset'));
  process.stdout.write(JSON.stringify(p.defaultPlan(), null, 2) + '\n');
  return 0;
}
