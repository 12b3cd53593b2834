/**
 * The water-data query API over DataStream-schema datasets: the schema and
 * vocabularies, an RFC 4180 CSV codec, the dataset loader, the columnar
 * store, the four collections, `$metadata` and the HTTP service.
 *
 * The schema, vocabularies, errors and settings sit here; the rest in
 * folders: `store/` (the store, its builder, dictionaries, code columns,
 * snapshots), `load/` (CSV scanning, reading datasets and their metadata,
 * live datasets, reload plans), `query/` (filters, pages and orders over a
 * store), `render/` (rows as JSON and CSV bytes, the render cache,
 * compressed pages) and `http/` (the service, its routes and documents, the
 * datasets admin, the explorer's service).
 * @module
 */
export { CsvSyntaxError, WaterError } from "./errors.ts";
export type { WaterErrorCode, WaterErrorOptions } from "./errors.ts";
export { WATER_ERROR_STATUS } from "./error_status.ts";
export { COLLECTIONS } from "./fields.ts";
export type {
  CollectionField,
  CollectionName,
  CollectionSchema,
  FieldLevel,
  SourceField,
} from "./fields.ts";
export { CsvScanner } from "./load/csv_scanner.ts";
export type { CsvScannerOptions } from "./load/csv_scanner.ts";
export { parseCsv } from "./load/parse_csv.ts";
export { formatCsvRow } from "./render/format_csv.ts";
export { WaterStore } from "./store/store.ts";
export type { DatasetRecord, IssuedIds, RowLevel, WaterStoreParts } from "./store/store.ts";
export { StoreBuilder } from "./store/store_builder.ts";
export type { FinishOptions, StoreBuilderOptions } from "./store/store_builder.ts";
export type { DatasetInput, DatasetLoadResult, LoadIssue } from "./store/dataset_reader.ts";
export type {
  BuiltColumn,
  BuiltDataset,
  BuiltLocation,
  DatasetIds,
  DictionaryBase,
} from "./store/built_dataset.ts";
export { decodeDatasetSnapshot, encodeDatasetSnapshot } from "./store/dataset_snapshot.ts";
export type { DatasetSnapshot, DecodeDatasetSnapshotOptions } from "./store/dataset_snapshot.ts";
export { readDatasetMetadata } from "./load/read_dataset_metadata.ts";
export { loadDatasets, reloadDatasets } from "./load/load_datasets.ts";
export type {
  ChangedDataset,
  LoadDatasetsOptions,
  LoadedDatasets,
  LoadProgress,
  LoadReport,
  ReloadReport,
} from "./load/load_datasets.ts";
export { planReload } from "./load/plan_reload.ts";
export type {
  DatasetChange,
  DatasetReport,
  FoundDataset,
  ReloadFailure,
  ReloadPlan,
  ReloadStep,
  ServedDataset,
} from "./load/plan_reload.ts";
export { prepareFilter, queryCount, queryPage } from "./query/query_collection.ts";
export type { CollectionQuery, PageResult } from "./query/query_collection.ts";
export { createWaterService } from "./http/create_water_service.ts";
export { LiveDatasets } from "./load/live_datasets.ts";
export type { LiveDatasetsOptions } from "./load/live_datasets.ts";
export { createDatasetsAdmin } from "./http/create_datasets_admin.ts";
export type { DatasetsAdminOptions, ReloadableDatasets } from "./http/create_datasets_admin.ts";
export type { StoreSource, WaterServiceOptions } from "./http/create_water_service.ts";
export { WATER_SETTINGS } from "./settings.ts";
export type { WaterConfig } from "./settings.ts";
export { startWaterService } from "./start_water_service.ts";
export type { StartWaterServiceOptions } from "./start_water_service.ts";
export { createExplorerService } from "./http/create_explorer_service.ts";
export type { ExplorerServiceOptions } from "./http/create_explorer_service.ts";
export type { TileServer } from "./parse_tile_url.ts";
export { WATER_MODULE } from "./water_module.ts";
export type { WaterContext, WaterModuleConfig } from "./water_module.ts";
