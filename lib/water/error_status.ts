import type { ErrorStatusTable } from "../http/mod.ts";
import type { FilterSyntaxError, ODataErrorCode } from "../odata/mod.ts";
import type { CsvSyntaxError, WaterErrorCode } from "./errors.ts";

/**
 * The HTTP statuses of the water-data API's codes (its own, and the OData
 * language's it raises), complete by its type: the water service answers
 * its errors with them (`withErrorStatuses`) and documents them.
 */
export const WATER_ERROR_STATUS = {
  ERR_ODATA_SYNTAX: 400,
  ERR_ODATA_UNKNOWN_FIELD: 400,
  ERR_ODATA_TYPE: 400,
  ERR_ODATA_QUERY_OPTION: 400,
  ERR_ODATA_UNSUPPORTED: 400,
  ERR_WATER_NOT_FOUND: 404,
  ERR_WATER_INVALID_ORDER: 400,
  ERR_WATER_RESPONSE_TOO_LARGE: 413,
  ERR_WATER_TOKEN_GONE: 410,
  ERR_WATER_TOO_MANY_GROUPS: 400,
  ERR_WATER_DATASET: 500,
  ERR_WATER_SNAPSHOT: 500,
  ERR_WATER_CSV_SYNTAX: 500,
} as const satisfies ErrorStatusTable<
  WaterErrorCode | CsvSyntaxError["code"] | ODataErrorCode | FilterSyntaxError["code"]
>;
