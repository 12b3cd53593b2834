import { MemoryQueue } from "../../lib/relay/mod.ts";
import { jobQueueContract } from "../_contracts/job_queue.ts";

jobQueueContract("MemoryQueue", (setup) => new MemoryQueue(setup));
