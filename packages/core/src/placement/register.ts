/**
 * Registers core's `auto` backend (placement/auto.ts), which also runs a list of backend names
 * such as "cpu,webgpu". Imported for its side effect by whoever creates backends by name (the
 * pipeline, the CLI), so that the registry itself imports nothing it registers.
 */
import { registerBuiltinBackend } from '../backend/registry.js';
import { autoBackend } from './auto.js';

registerBuiltinBackend('auto', autoBackend);
