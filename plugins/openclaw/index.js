// skillsleep's /sleep command inside OpenClaw. What the user typed after /sleep goes, as it is, to
// `skillsleep sleep --line TEXT` (the /sleep verbs: status, diff, adopt, reject, rollback, run, cost,
// help), and what that prints comes back as the reply: no model call, and no logic of skillsleep's
// here. `/sleep run` gets `--detach`, so that a night does not hold the chat for hours.
//
// Settings: config.json beside this file (`skillsleep install openclaw` writes the absolute path of
// its `skillsleep` there), overridden by `plugins.entries.skillsleep.config` in openclaw.json. Every
// setting but `command` is a [sleep] setting of skillsleep, passed as SKILLSLEEP_<KEY>; an empty
// one (or 0) leaves skillsleep's own settings (config.toml) in charge. slash_sleep.py applies the
// same rule.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";

const TIMEOUT_MS = 10 * 60 * 1000;
const MAX_OUTPUT = 4 * 1024 * 1024;

/** config.json beside this file, overridden by the plugin's config in openclaw.json. */
export function settings(pluginConfig) {
  const defaults = JSON.parse(readFileSync(new URL("./config.json", import.meta.url), "utf8"));
  return { ...defaults, ...(pluginConfig ?? {}) };
}

/** `base` plus SKILLSLEEP_<KEY> for each setting but `command` that is not empty or 0. */
export function sleepEnv(config, base) {
  const env = { ...base };
  for (const [key, value] of Object.entries(config)) {
    if (key !== "command" && value !== "" && value !== 0 && value !== null && value !== undefined) {
      env[`SKILLSLEEP_${key.toUpperCase()}`] = String(value);
    }
  }
  return env;
}

/** The /sleep line as skillsleep gets it: `run` without `--detach` runs in the background. */
export function sleepLine(text) {
  const line = String(text ?? "").trim();
  const words = line.split(/\s+/);
  return words[0] === "run" && !words.includes("--detach") ? `${line} --detach` : line;
}

function failure(command, error) {
  if (error.code === "ENOENT") {
    return `**Error:** /sleep cannot find skillsleep at \`${command}\`. Install skillsleep, then run ` +
      "`skillsleep install openclaw` (it writes the absolute path of its command into the plugin's " +
      "config.json), or set `plugins.entries.skillsleep.config.command` to that path.";
  }
  if (error.code === "EACCES") {
    return `**Error:** /sleep may not run \`${command}\` (permission denied); make it executable, or point ` +
      "`plugins.entries.skillsleep.config.command` at the right skillsleep.";
  }
  if (error.killed) {
    return `**Error:** skillsleep did not answer within ${TIMEOUT_MS / 60000} minutes and was stopped; ` +
      "`/sleep run` runs a night in the background.";
  }
  return `**Error:** /sleep could not run \`${command}\`: ${error.message}`;
}

/** Run `skillsleep sleep --line TEXT`; resolve to the reply text (stdout, else stderr). Never rejects. */
export function runSleep(config, text, base = process.env) {
  const command = config.command || "skillsleep";
  return new Promise((resolve) => {
    try {
      execFile(command, ["sleep", "--line", sleepLine(text)],
        { env: sleepEnv(config, base), timeout: TIMEOUT_MS, maxBuffer: MAX_OUTPUT, windowsHide: true },
        (error, stdout, stderr) => {
          const out = String(stdout ?? "").trim() || String(stderr ?? "").trim();
          if (error && (typeof error.code === "string" || error.killed || !out)) {
            resolve(typeof error.code === "number" && !out
              ? `**Error:** skillsleep exited ${error.code} without a word; run \`${command} status\` in a terminal.`
              : failure(command, error));
            return;
          }
          resolve(out);  // a verb's own error is markdown on stdout already (exit 1 or 2)
        });
    } catch (error) {  // execFile itself refused (a bad argument): a reply, never a thrown error
      resolve(failure(command, error));
    }
  });
}

export default {
  id: "skillsleep",
  name: "skillsleep",
  description: "/sleep status|diff|adopt|reject|rollback|run|cost|help: what skillsleep learned overnight",
  register(api) {
    const config = settings(api.pluginConfig);
    api.registerCommand({
      name: "sleep",
      description: "skillsleep: status, diff, adopt, reject, rollback, run, cost, help",
      acceptsArgs: true,
      handler: async (ctx) => ({ text: await runSleep(config, ctx?.args ?? "") }),
    });
  },
};
