/** Loads the blueprints kept as JSON files in a folder (BLUEPRINTS_DIR; the repository's `blueprints/` by default). */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { BlueprintSchema, type Blueprint } from './blueprint';

/** The repository's own blueprints. */
export const DEFAULT_BLUEPRINTS_DIR = path.resolve(__dirname, '..', '..', 'blueprints');

/** Every `*.json` blueprint in `dir`, validated; a bad file stops start-up with its name and what is wrong. */
export function loadBlueprints(dir: string = DEFAULT_BLUEPRINTS_DIR): Blueprint[] {
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort();
  } catch {
    return []; // no folder, no blueprints
  }
  const blueprints = files.map((file) => {
    const parsed = BlueprintSchema.safeParse(JSON.parse(readFileSync(path.join(dir, file), 'utf8')));
    if (!parsed.success) throw new Error(`blueprint ${path.join(dir, file)} is invalid: ${parsed.error.message}`);
    return parsed.data;
  });
  const names = new Set<string>();
  for (const b of blueprints) {
    if (names.has(b.name)) throw new Error(`two blueprints in ${dir} are named "${b.name}"`);
    names.add(b.name);
  }
  return blueprints;
}
