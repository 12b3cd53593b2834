import { MemoryAuthStore } from "../../lib/auth/mod.ts";
import { authStoreContract } from "../_contracts/auth_store.ts";

authStoreContract("MemoryAuthStore", () => new MemoryAuthStore());
