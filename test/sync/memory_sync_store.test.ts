import { MemorySyncStore } from "../../lib/sync/mod.ts";
import { syncStoreContract } from "../_contracts/sync_store.ts";

syncStoreContract("MemorySyncStore", (setup) => new MemorySyncStore(setup));
