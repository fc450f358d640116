// The relay's settings as the objects take them: parsed once per environment by the settings
// module (server/settings.ts, the same parse the Worker checks on every request), never read raw.
// The Worker refuses every request while a setting is bad (500 bad_setting, workers/app.ts), so an
// object reached at all runs with good ones; one woken by its alarm while a setting is bad throws
// rather than guess a value its operator did not choose. No other module of durable-objects/ reads
// a setting from the environment (test/unit/object-settings.test.ts).
import { problemsText, settingsOf, type Settings } from "../../server/settings";

export type { Settings };

/** The settings of `env`, parsed once (server/settings.ts); throws, naming each bad setting, when one is. */
export function objectSettings(env: object): Settings {
  const read = settingsOf(env);
  if (!read.ok) throw new Error(`bad setting: ${problemsText(read.problems)}`);
  return read.settings;
}
