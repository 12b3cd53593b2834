import { type ConfigOf, textSetting } from "../config/mod.ts";

/** Where state is kept: the settings of `lib/storage`, read by `readSettings`. */
export const STORAGE_SETTINGS = {
  stateDir: textSetting("STATE_DIR", {
    default: "var",
    emptyMeansNone: true,
    accepts: "a folder; empty for none",
    doc: "where users, tokens and synced data are kept (a journal per store, for one process at a time); empty keeps them in memory only, lost at a restart",
  }),
} as const;

/** Where state is kept. */
export type StorageConfig = ConfigOf<typeof STORAGE_SETTINGS>;
