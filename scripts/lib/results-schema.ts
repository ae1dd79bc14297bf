import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import { projectPath } from '../../services/shared/paths.js';

// ajv-formats is CommonJS whose types describe only its `default`: require gives the function.
const addFormats = createRequire(import.meta.url)('ajv-formats') as (ajv: Ajv) => Ajv;

/** Validates a parsed results.json against services/core/report/results.schema.json; returns the errors. */
export function resultsSchemaErrors(results: unknown): string[] {
  const ajv = new Ajv({ allErrors: true, strict: true });
  addFormats(ajv);
  const validate = ajv.compile(
    JSON.parse(readFileSync(projectPath('services', 'core', 'report', 'results.schema.json'), 'utf8')) as object,
  );
  if (validate(results)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
}
