// Prints, as JSON, the LLM context pi itself builds for a session file: its own
// parse, migration and buildSessionContext (no model, no network, file untouched).
// Usage: node context.mjs <pi-coding-agent package dir> <session.jsonl>
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [packageDir, sessionFile] = process.argv.slice(2);
const sm = await import(pathToFileURL(join(packageDir, "dist", "core", "session-manager.js")).href);
const entries = sm.parseSessionEntries(readFileSync(sessionFile, "utf8"));
sm.migrateSessionEntries(entries);
const context = sm.buildSessionContext(entries.filter((e) => e.type !== "session"));
process.stdout.write(
  JSON.stringify(
    context.messages.map((m) => ({ role: m.role, customType: m.customType ?? null })),
  ),
);
