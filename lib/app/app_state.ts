/** Where an app is in its life: made, starting, serving, closing or closed. */
export type AppState = "new" | "starting" | "started" | "closing" | "closed";
